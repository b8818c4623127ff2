#include "core/runtime/massive_entries.h"

#include <torch/torch.h>

namespace poslens {

at::Tensor massive_entries(const at::Tensor& x) {
  const auto magnitude = x.detach().abs().to(torch::kFloat32);
  const auto median = std::get<0>(magnitude.flatten(1).median(1));  // [batch]
  const auto ratio_floor = (median * kMassiveRatio).view({-1, 1, 1});
  return (magnitude > kMassiveAbsolute) & (magnitude > ratio_floor);
}

}  // namespace poslens
