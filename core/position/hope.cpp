#include "core/position/hope.h"

#include <torch/torch.h>

#include <cmath>
#include <string>

#include "core/base/error.h"
#include "core/position/rope.h"
#include "core/position/component_params.h"

namespace poslens {

int64_t hope_kept_components(double base, int64_t d, int64_t L) {
  if (d < 2 || d % 2 != 0)
    throw Error("hope_kept_components: d " + std::to_string(d) + " must be even and >= 2");
  if (!(base > 0.0) || base == 1.0)
    throw Error("hope_kept_components: base must be > 0 and != 1, got " + std::to_string(base));
  if (L < 1) throw Error("hope_kept_components: training length L must be >= 1");
  const double threshold = 2.0 * 3.14159265358979323846 / static_cast<double>(L);
  int64_t kept = 0;
  for (int64_t c = 0; c < d / 2; ++c)
    if (std::pow(base, -2.0 * static_cast<double>(c) / static_cast<double>(d)) >= threshold) ++kept;
  return kept;
}

at::Tensor apply_hope(const at::Tensor& x, const at::Tensor& positions, double base, int64_t L,
                      RopePairing pairing) {
  if (!x.defined() || x.dim() != 4)
    throw Error("apply_hope: expected x [batch, pos, head, d_head]");
  const int64_t d_head = x.size(3);
  const int64_t kept = hope_kept_components(base, d_head, L);  // validates d_head, base, L
  if (positions.dim() != 1 || positions.size(0) != x.size(1))
    throw Error("apply_hope: positions must be [pos] with pos = " + std::to_string(x.size(1)));

  const int64_t half = d_head / 2;
  // RoPE's frequencies with the low-frequency components set to 0: a rotation by angle 0 is the
  // identity (cos 0 = 1, sin 0 = 0 exactly), so those dims pass through unchanged.
  auto freqs = rope_frequencies(base, d_head);
  if (kept < half) freqs.narrow(0, kept, half - kept).zero_();
  return apply_rotation(x, positions, freqs, pairing);
}

HopeEncoding::HopeEncoding(double rope_theta, int64_t L, int64_t d_head, RopePairing pairing)
    : rope_theta_(rope_theta), L_(L), d_head_(d_head), pairing_(pairing) {
  hope_kept_components(rope_theta_, d_head_, L_);  // rejects bad arguments now
}

std::string HopeEncoding::describe() const {
  return "HoPE (" + std::to_string(hope_kept_components(rope_theta_, d_head_, L_)) + " of " +
         std::to_string(d_head_ / 2) + " components rotated, " + to_string(pairing_) +
         " pairs, rope_theta=" + std::to_string(static_cast<int64_t>(rope_theta_)) +
         ", L=" + std::to_string(L_) + ")";
}

at::Tensor HopeEncoding::rotate(const at::Tensor& x, const at::Tensor& positions) const {
  return apply_hope(x, positions, rope_theta_, L_, pairing_);
}

std::optional<RotaryInfo> HopeEncoding::rotary_info(int64_t seq_len) const {
  (void)seq_len;
  return RotaryInfo{pairing_, d_head_, d_head_, rope_frequencies(rope_theta_, d_head_), 1.0,
                    hope_kept_components(rope_theta_, d_head_, L_)};
}

ComponentRecipe hope_recipe(const PositionComponentSpec& spec, const PositionContext& c) {
  const ComponentParams p(spec, {"rope_theta", "pairing", "L"});
  const double theta = p.number("rope_theta", 10000.0);
  const int64_t L = p.integer("L", c.n_ctx), d_head = c.d_head;
  const auto pairing = p.pairing();
  HopeEncoding check(theta, L, d_head, pairing);  // bad parameters fail at config time
  return {{}, [=](const PositionWeights&) {
            return std::make_unique<HopeEncoding>(theta, L, d_head, pairing);
          }};
}

}  // namespace poslens
