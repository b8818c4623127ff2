#pragma once
// Landmarks on the rotary components of a RoPE model with training length L, computed from
// its θ_c (after any scaling) — what every frequency view marks beside the activated band
// (π/L, 2π/L) and HoPE's cut. Plain std types, header only: the widgets draw them without
// LibTorch.
#include <cmath>
#include <cstdint>
#include <vector>

namespace poslens {

/// Turns component c makes within L positions: r_c = L·θ_c / 2π.
inline double turns_within(double theta, int64_t L) { return static_cast<double>(L) * theta / (2.0 * M_PI); }

/// Liu et al. 2023 ("Scaling Laws of RoPE-based Extrapolation", arXiv 2310.05209, §3.2): the
/// critical dimension d_extra = 2⌈(d/2)·log_β(L/2π)⌉ — the components before it complete at
/// least one period within L, those from it on never do in training. Returned as a component
/// count (d_extra / 2), computed from θ_c so it holds for scaled RoPE too: the number of
/// components with period 2π/θ_c ≤ L (θ_c = 0, past HoPE's cut, never turn).
inline int64_t critical_component(const std::vector<double>& theta, int64_t L) {
  int64_t count = 0;
  for (double t : theta)
    if (t > 0 && turns_within(t, L) >= 1.0) ++count;
  return count;
}

/// YaRN's correction range (Peng et al. 2023, "YaRN: Efficient Context Window Extension of
/// Large Language Models", arXiv 2309.00071, §3.2 "NTK-by-parts", α = 1, β = 32): the
/// components that turn between α and β times within L, interpolated by a ramp when the
/// context is extended (those above β are kept, those below α fully interpolated). As
/// [first, last] component indices, {-1, -1} when none.
struct ComponentRange {
  int64_t first = -1, last = -1;
  bool empty() const { return first < 0; }
};
inline ComponentRange yarn_correction_range(const std::vector<double>& theta, int64_t L, double alpha = 1.0,
                                            double beta = 32.0) {
  ComponentRange range;
  for (int64_t c = 0; c < static_cast<int64_t>(theta.size()); ++c) {
    const double r = turns_within(theta[static_cast<size_t>(c)], L);
    if (theta[static_cast<size_t>(c)] > 0 && r >= alpha && r <= beta) {
      if (range.first < 0) range.first = c;
      range.last = c;
    }
  }
  return range;
}

}  // namespace poslens
