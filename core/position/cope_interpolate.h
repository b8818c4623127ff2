#pragma once
// CoPE's contextual positions and interpolated position logits in one pass over each row
// (Golovneva et al. 2024 §4 eqs. 4, 7–8; the gate cumulative sum and the interpolation that
// facebookresearch/RAM projects/cope computes as flip-cumsum-flip, clamp, two gathers and a
// blend, eight [B, H, Q, K] tensors forward and as many backward).
#include <ATen/core/Tensor.h>

#include <utility>

namespace poslens {

/// gates [B, H, Q, K] (0 where masked), z_int [B, H, Q, npos_max] = q_i · e[p] for integer p,
/// allowed bool [Q, K] or undefined (every key visible), z_scale the factor on z (1 for NoDiv).
/// Returns {z [B, H, Q, K], positions [B, H, Q, K]}:
///   positions_ij = min(sum_{t >= j} g_it, npos_max − 1)
///   z_ij = z_scale · (z_int[ceil p] · w + z_int[floor p] · (1 − w)),  w = p − floor p
/// both 0 where allowed is false. Differentiable in gates and z_int (both outputs), with the
/// gradients of the composite form: clamped positions pass none, integer positions no slope.
/// CPU float32 and float64 run the fused pass (parallel over rows; the sum accumulated in
/// double as at::cumsum does, so the same bits as the composite form); other devices and dtypes
/// run reference::cope_interpolate. Throws poslens::Error on shapes that do not match, and on a
/// negative or NaN position (gates must be ≥ 0).
std::pair<at::Tensor, at::Tensor> cope_interpolate(const at::Tensor& gates, const at::Tensor& z_int,
                                                   const at::Tensor& allowed, double z_scale);

namespace reference {
/// The composite form (flip-cumsum-flip, clamp, gathers; the reference implementation's
/// operations): same arguments and result as poslens::cope_interpolate. For tests and for
/// devices the fused pass does not cover.
std::pair<at::Tensor, at::Tensor> cope_interpolate(const at::Tensor& gates, const at::Tensor& z_int,
                                                   const at::Tensor& allowed, double z_scale);
}  // namespace reference

}  // namespace poslens
