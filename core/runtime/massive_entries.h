#pragma once
// Massive activations (Sun et al. 2024, "Massive Activations in Large Language Models",
// arXiv 2402.17762): the criterion of its §2, shared by the analysis that finds them
// (analysis/massive_activations.h) and the forward pass that ablates them
// (ModelConfig::ablate_massive_activations).
#include <ATen/core/Tensor.h>

namespace poslens {

/// Sun et al. §2's threshold: a magnitude over `kMassiveAbsolute` and over `kMassiveRatio` times
/// the median magnitude of the layer's residual stream.
inline constexpr double kMassiveAbsolute = 100.0;
inline constexpr double kMassiveRatio = 1000.0;

/// bool, the shape of `x` (a residual stream [batch, pos, d_model], any float dtype and device):
/// true where |x| > kMassiveAbsolute and |x| > kMassiveRatio × the median |x| over that
/// sequence's positions and dimensions (torch's lower median, as the analysis reports it).
at::Tensor massive_entries(const at::Tensor& x);

}  // namespace poslens
