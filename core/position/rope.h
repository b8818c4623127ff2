#pragma once
// Rotary position embedding (Su et al. 2021, RoFormer; docs/formulas.md §2 "RoPE"; Chen et al. 2024 §4.2.1).
#include "core/position/position_encoding.h"
#include "core/position/rope_scaling.h"
#include "core/position/components.h"

namespace poslens {

/// theta_c = rope_theta^(-2c/rotary_dim), c = 0..rotary_dim/2-1 (radians per position), as
/// float64 [rotary_dim/2]. rotary_dim == d_head for full rotary, smaller for partial rotary
/// (the HF convention: frequencies are spread over rotary_dim).
at::Tensor rope_frequencies(double rope_theta, int64_t rotary_dim);

/// Test references (not on the runtime path): a second, direct form of a formula the runtime
/// computes elsewhere, kept so tests can check the runtime against it. Never call from core.
namespace reference {
/// Rotates each 2-D pair of the first `rotary_dim` dims of `x` [batch, pos, head, d_head] by
/// m·theta_c, m = positions[pos] (int64 [pos]); the remaining dims pass through unchanged.
///   Interleaved pairs (2c, 2c+1) — GPT-J / Meta / llama2.c:
///     out[2c] = x[2c]·cos − x[2c+1]·sin,  out[2c+1] = x[2c]·sin + x[2c+1]·cos
///   HalfSplit pairs (c, c + rotary_dim/2) — HF `rotate_half`:
///     out[c] = x[c]·cos − x[c+r/2]·sin,  out[c+r/2] = x[c+r/2]·cos + x[c]·sin
/// Angles are computed in float64, cos/sin in float32, the result has x's dtype and device.
/// Throws poslens::Error if rotary_dim is odd, < 2 or > d_head, or positions has the wrong size.
at::Tensor apply_rope(const at::Tensor& x, const at::Tensor& positions, double rope_theta,
                      int64_t rotary_dim, RopePairing pairing);
}  // namespace reference

/// The rotation itself, shared by RoPE, scaled RoPE and HoPE: rotates the first
/// 2·inv_freq.size(0) dims of `x` [batch, pos, head, d_head] pairwise by m·inv_freq[c] (radians,
/// float64 [n_pairs]), pairs chosen by `pairing` as in apply_rope, with cos and sin multiplied by
/// `attention_factor` (YaRN / longrope, HF modeling_rope_utils). Other dims pass through.
/// Throws poslens::Error if 2·n_pairs > d_head or positions is not [pos].
at::Tensor apply_rotation(const at::Tensor& x, const at::Tensor& positions,
                          const at::Tensor& inv_freq, RopePairing pairing,
                          double attention_factor = 1.0);

class RotaryEncoding : public PositionEncoding {
 public:
  /// `scaling` follows HF modeling_rope_utils (rope_scaling.h); type "default" is plain RoPE.
  /// Throws poslens::Error for invalid scaling parameters.
  RotaryEncoding(double rope_theta, int64_t rotary_dim, int64_t d_head, RopePairing pairing,
                 RopeScaling scaling = {});
  std::string describe() const override;
  bool rotates() const override { return true; }
  std::optional<RotaryInfo> rotary_info(int64_t seq_len = 0) const override;
  at::Tensor rotate(const at::Tensor& x, const at::Tensor& positions) const override;

 private:
  double rope_theta_;
  int64_t rotary_dim_;
  int64_t d_head_;
  RopePairing pairing_;
  RopeScaling scaling_;
};

/// The "rope" component of the PosLens format (docs/poslens-format.md): its parameters,
/// weights (with their initialisation) and checks.
ComponentRecipe rope_recipe(const PositionComponentSpec& spec, const PositionContext& c);

}  // namespace poslens
