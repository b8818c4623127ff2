#pragma once
// RoPE frequency analysis, the tensor side (docs/formulas.md §3 "RoPE per-frequency decomposition",
// "Variance accounted for", "Activated components"; Chen et al. 2024 §4.2, eqs. 4–5, Fig. 2): splitting
// rotary attention scores into one term per rotary component, the VAF of a component curve,
// and the band of "activated" components. Pure functions of tensors; no model, no Qt.
#include <utility>

#include <ATen/core/Tensor.h>

#include "core/position/position_encoding.h"

namespace poslens {

/// The dimensions of each rotary pair c = 0..rotary_dim/2-1, as two int64 [C] tensors (first,
/// second): (2c, 2c+1) for Interleaved (GPT-J / Meta / llama2.c), (c, c + rotary_dim/2) for
/// HalfSplit (HF `rotate_half`). Throws poslens::Error for an odd or non-positive rotary_dim.
std::pair<at::Tensor, at::Tensor> rotary_pair_dims(RopePairing pairing, int64_t rotary_dim);

/// The angle per position each component actually turns by, float64 [rotary_dim/2] (radians):
/// info.theta for c < kept_components, 0 for HoPE's position-independent components past the
/// cut (Chen et al. 2024 §4.3).
at::Tensor effective_theta(const RotaryInfo& info);

/// One attention layer's logits split by rotary component.
struct RotaryScoreParts {
  /// s_c(m, n) on the score scale (times the attention scale and attention_factor²), float32
  /// [batch, head, component, q_pos, k_pos].
  at::Tensor components;
  /// scale · q·k over the dims past rotary_dim (partial rotary), float32 [batch, head, q_pos,
  /// k_pos]; undefined when every dim rotates.
  at::Tensor remainder;
};

/// Chen et al. 2024 eq. 4 (docs/formulas.md §3): for component c with pairs (q0, q1), (k0, k1) taken in the
/// model's pairing,
///   s_c(m, n) = scale·af²·[(q0·k0 + q1·k1)·cos((m−n)·θ_c) + (q0·k1 − q1·k0)·sin((m−n)·θ_c)]
/// with θ_c = effective_theta(info) and af = info.attention_factor (YaRN / longrope scale cos
/// and sin, so the rotated dot product by af²). Σ_c s_c + remainder is the model's scale·q̃·k̃
/// (rotated q and k): `hook_attn_scores` on allowed entries when no position term is added.
///   q: float [batch, q_pos, head, d_head] — `hook_q`, before rotation.
///   k: float [batch, k_pos, kv_head, d_head] — `hook_k`; kv heads are repeated to the query
///      heads as the forward does under GQA (query head h reads kv head h / (head / kv_head)).
///   q_positions, k_positions: int64 [q_pos], [k_pos] — the positions m, n they had.
/// Computed in float32 with angles in float64 (as the runtime rotates), on q's device.
/// Throws poslens::Error for mismatched shapes, d_head different from info.d_head, or a head
/// count that kv_head does not divide.
RotaryScoreParts decompose_rotary_scores(const at::Tensor& q, const at::Tensor& k,
                                         const at::Tensor& q_positions,
                                         const at::Tensor& k_positions, const RotaryInfo& info,
                                         double scale);

/// Variance accounted for (Chen et al. 2024 eq. 5 with the variance of the standard definition, Yoon
/// et al. 2021; docs/formulas.md §3): VAF = 100·(1 − Var(y − y_c)/Var(y)) over the last dimension,
/// in percent. `y` and `y_c` broadcast against each other ([..., n]); the result is float64
/// [...] (the broadcast shape without the last dimension), NaN where Var(y) is 0 (nothing to
/// account for). Population variances (the ratio does not depend on the normalisation).
/// Throws poslens::Error when the last dimensions differ or are empty.
at::Tensor variance_accounted_for(const at::Tensor& y, const at::Tensor& y_c);

/// Chen et al. 2024 §4.2.2: component c is "activated" when π/L < θ_c < 2π/L — its cosine makes at
/// most a half cycle within the training length L, a U over 0..L. `theta` float64 [C]
/// (radians per position); returns bool [C]. Throws poslens::Error for L < 1.
at::Tensor activated_components(const at::Tensor& theta, int64_t L);

/// Wavelength 2π/θ_c in positions, float64 [C] (infinity where θ_c = 0).
at::Tensor wavelengths(const at::Tensor& theta);

}  // namespace poslens
