#pragma once
// HoPE: high-frequency rotary position encoding (Chen et al. 2024 §5.1; docs/formulas.md §2 "HoPE").
#include <cstdint>

#include <ATen/core/Tensor.h>

#include "core/position/position_encoding.h"
#include "core/position/components.h"

namespace poslens {

/// The split index a of Chen et al. 2024 eq. 6-7: the number of components c (0..d/2-1) with
/// theta_c = base^(-2c/d) >= 2·pi/L, i.e. those that complete at least one full turn within the
/// training length L. theta_c decreases with c, so these are the components 0..a-1 (the high
/// frequencies). E.g. d=64, base=1e4, L=512 gives 16.
/// Throws poslens::Error if d is odd or < 2, base <= 0 or == 1, or L < 1.
int64_t hope_kept_components(double base, int64_t d, int64_t L);

/// HoPE on `x` [batch, pos, head, d_head] at `positions` (int64 [pos]): the first
/// a = hope_kept_components(base, d_head, L) components are rotated exactly as by
/// apply_rope(x, positions, base, d_head, pairing) (the same theta_c, spread over the full d_head);
/// the remaining components are left unrotated (position-independent: they contribute plain
/// q_c·k_c). Components map to dims by `pairing`: Interleaved (2c, 2c+1) — the kept dims are the
/// first 2a, as in the paper's q[:2a]; HalfSplit (c, c + d_head/2).
/// Angles in float64, cos/sin in float32; the result has x's dtype and device.
/// Throws poslens::Error if x is not 4-D, d_head is odd, positions has the wrong size, or the
/// arguments of hope_kept_components are invalid.
at::Tensor apply_hope(const at::Tensor& x, const at::Tensor& positions, double base, int64_t L,
                      RopePairing pairing);

/// HoPE as a model component: rotates q and k by apply_hope (hook_rot_q/k), no weights.
class HopeEncoding : public PositionEncoding {
 public:
  /// Throws poslens::Error for the arguments hope_kept_components rejects.
  HopeEncoding(double rope_theta, int64_t L, int64_t d_head, RopePairing pairing);
  std::string describe() const override;
  bool rotates() const override { return true; }
  /// theta_c over the full d_head, kept_components = hope_kept_components(rope_theta, d_head, L).
  std::optional<RotaryInfo> rotary_info(int64_t seq_len = 0) const override;
  at::Tensor rotate(const at::Tensor& x, const at::Tensor& positions) const override;

 private:
  double rope_theta_;
  int64_t L_, d_head_;
  RopePairing pairing_;
};

/// The "hope" component of the PosLens format (docs/poslens-format.md): its parameters,
/// weights (with their initialisation) and checks.
ComponentRecipe hope_recipe(const PositionComponentSpec& spec, const PositionContext& c);

}  // namespace poslens
