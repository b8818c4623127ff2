#pragma once
// Grouped-query attention: key/value heads repeated to the query heads.
#include <ATen/core/Tensor.h>

namespace poslens {

/// [B, Hkv, K, dh] repeated to [B, Hkv·group, K, dh]: query head h reads kv head h / group
/// (Ainslie et al. 2023, arXiv:2305.13245). `kv` itself when group is 1.
inline at::Tensor to_query_heads(const at::Tensor& kv, int64_t group) {
  if (group == 1) return kv;
  const auto s = kv.sizes();
  return kv.unsqueeze(2).expand({s[0], s[1], group, s[2], s[3]}).reshape({s[0], s[1] * group, s[2], s[3]});
}

}  // namespace poslens
