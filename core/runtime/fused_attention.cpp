#include "core/runtime/fused_attention.h"

#include <torch/torch.h>
#include <torch/version.h>

#include <cstdlib>
#include <limits>
#include <string>
#include <tuple>

#include "core/base/error.h"
#include "core/runtime/kv_heads.h"

#define POSLENS_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace poslens {

bool fused_attention_built() { return POSLENS_TORCH_AT_LEAST(2, 0); }

bool fused_lse_built() { return POSLENS_TORCH_AT_LEAST(2, 3); }

bool fused_attention_enabled() {
  static const bool enabled = [] {
    const char* text = std::getenv("POSLENS_ATTENTION");
    const std::string choice = text ? text : "";
    if (choice.empty() || choice == "fused") return fused_attention_built();
    if (choice == "blocked") return false;
    throw Error("POSLENS_ATTENTION must be fused or blocked, got \"" + choice + "\"");
  }();
  return enabled;
}

#if POSLENS_TORCH_AT_LEAST(2, 0)
namespace {

/// k or v repeated to the `heads` query heads.
at::Tensor repeat_kv(const at::Tensor& kv, int64_t heads) { return to_query_heads(kv, heads / kv.size(1)); }

/// The bias as the kernels take it: float in q's dtype (a bool mask becomes 0 / −inf).
at::Tensor float_bias(const at::Tensor& bias, const at::Tensor& q) {
  if (!bias.defined()) return bias;
  if (bias.scalar_type() == torch::kBool)
    return torch::zeros(bias.sizes(), q.options())
        .masked_fill_(bias.logical_not(), -std::numeric_limits<float>::infinity());
  return bias.to(q.scalar_type());
}

#if POSLENS_TORCH_AT_LEAST(2, 3)
/// The memory-efficient CUDA kernel reads its bias with rows aligned to 16 elements, as
/// PyTorch's own SDPA dispatch pads it (pad_bias in attention.cu).
at::Tensor aligned_bias(const at::Tensor& bias, const at::Tensor& q) {
  if (!bias.defined()) return bias;
  const int64_t B = q.size(0), H = q.size(1), R = q.size(2), K = bias.size(-1);
  const int64_t padded = (K + 15) / 16 * 16;
  auto out = torch::empty({B, H, R, padded}, q.options()).narrow(-1, 0, K);
  out.copy_(bias.expand({B, H, R, K}));
  return out;
}
#endif

}  // namespace
#endif

FusedAttention fused_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const at::Tensor& bias, bool causal, double scale, bool with_lse) {
#if POSLENS_TORCH_AT_LEAST(2, 0)
  if (v.size(-1) != q.size(-1)) {
    // Values narrower or wider than q and k (MLA's v_head_dim): not every kernel takes them
    // (flash attention needs one head size), so the narrower side is padded with zero channels
    // — nothing added to q·k (the scale is passed) or to z — and z is cut back to v's width.
    const int64_t dv = v.size(-1), dq = q.size(-1);
    const auto vq = dv < dq ? at::constant_pad_nd(v, {0, dq - dv}) : v;
    const auto qk = dv > dq ? at::constant_pad_nd(q, {0, dv - dq}) : q;
    const auto kk = dv > dq ? at::constant_pad_nd(k, {0, dv - dq}) : k;
    auto out = fused_attention(qk, kk, vq, bias, causal, scale, with_lse);
    out.z = out.z.narrow(-1, 0, dv);
    return out;
  }
  const int64_t heads = q.size(1);
  const auto mask = float_bias(bias, q);
  const c10::optional<at::Tensor> attn_mask =
      mask.defined() ? c10::optional<at::Tensor>(mask) : c10::nullopt;
  FusedAttention out;
  if (!with_lse) {
#if POSLENS_TORCH_AT_LEAST(2, 5)
    out.z = at::scaled_dot_product_attention(q, k, v, attn_mask, 0.0, causal, scale,
                                             /*enable_gqa=*/k.size(1) != heads);
#else
    out.z = at::scaled_dot_product_attention(q, repeat_kv(k, heads), repeat_kv(v, heads), attn_mask,
                                             0.0, causal, scale);
#endif
    return out;
  }
#if POSLENS_TORCH_AT_LEAST(2, 3)
  const auto kq = repeat_kv(k, heads), vq = repeat_kv(v, heads);
  if (q.is_cuda()) {
    const auto padded = aligned_bias(mask, q);
    const auto result = at::_scaled_dot_product_efficient_attention(
        q, kq, vq, padded.defined() ? c10::optional<at::Tensor>(padded) : c10::nullopt,
        /*compute_log_sumexp=*/true, 0.0, causal, scale);
    out.z = std::get<0>(result);
    out.lse = std::get<1>(result).narrow(2, 0, q.size(2));  // padded to 32 rows
  } else {
    std::tie(out.z, out.lse) =
        at::_scaled_dot_product_flash_attention_for_cpu(q, kq, vq, 0.0, causal, attn_mask, scale);
  }
  out.lse = out.lse.to(torch::kFloat32);
  return out;
#else
  throw Error("the row log-sum-exp of the fused kernels needs LibTorch 2.3 or later (this build: " +
              std::string(TORCH_VERSION) + ")");
#endif
#else
  (void)q, (void)k, (void)v, (void)bias, (void)causal, (void)scale, (void)with_lse;
  throw Error("fused attention needs LibTorch 2.0 or later (this build: " + std::string(TORCH_VERSION) + ")");
#endif
}

}  // namespace poslens
