#include "core/position/rope.h"

#include <torch/torch.h>

#include <sstream>

#include "core/base/error.h"
#include "core/base/narrow.h"
#include "core/position/component_params.h"

namespace poslens {

at::Tensor rope_frequencies(double rope_theta, int64_t rotary_dim) {
  const auto c = torch::arange(0, rotary_dim / 2, torch::kFloat64);
  return torch::pow(rope_theta, -2.0 * c / static_cast<double>(rotary_dim));
}

namespace reference {

at::Tensor apply_rope(const at::Tensor& x, const at::Tensor& positions, double rope_theta,
                      int64_t rotary_dim, RopePairing pairing) {
  if (x.dim() != 4) throw Error("apply_rope: expected x [batch, pos, head, d_head]");
  const int64_t d_head = x.size(3);
  if (rotary_dim < 2 || rotary_dim % 2 != 0 || rotary_dim > d_head)
    throw Error("apply_rope: rotary_dim " + std::to_string(rotary_dim) +
                " must be even and in [2, d_head=" + std::to_string(d_head) + "]");
  return apply_rotation(x, positions, rope_frequencies(rope_theta, rotary_dim), pairing);
}

}  // namespace reference

at::Tensor apply_rotation(const at::Tensor& x, const at::Tensor& positions,
                          const at::Tensor& inv_freq, RopePairing pairing,
                          double attention_factor) {
  if (x.dim() != 4) throw Error("apply_rotation: expected x [batch, pos, head, d_head]");
  const int64_t d_head = x.size(3), half = inv_freq.size(0), rotary_dim = 2 * half;
  if (rotary_dim < 2 || rotary_dim > d_head)
    throw Error("apply_rotation: " + std::to_string(half) + " frequency pairs do not fit d_head=" +
                std::to_string(d_head));
  if (positions.dim() != 1 || positions.size(0) != x.size(1))
    throw Error("apply_rotation: positions must be [pos] with pos = " + std::to_string(x.size(1)));

  const auto freqs = inv_freq.to(x.device(), torch::kFloat64);
  const auto angles = positions.to(x.device(), torch::kFloat64).unsqueeze(1) * freqs;  // [pos, half]
  const auto cos = angles.cos() * attention_factor, sin = angles.sin() * attention_factor;

  // Pair members (a, b) become (a·cos − b·sin, b·cos + a·sin), written as
  //   x·[cos, cos] + swap(x)·[−sin, sin]
  // with swap exchanging each pair's members: a flip of a view, so the backward pass has no
  // slices (each a zero tensor and a copy) or concatenation; the same float32 operations, so the
  // same bits, as rotating a and b apart.
  const bool interleaved = pairing == RopePairing::Interleaved;
  const int64_t pair_dim = interleaved ? 4 : 3;  // where the two members sit in the 5-d view
  const auto per_member = [&](const at::Tensor& first, const at::Tensor& second) {
    // [pos, half] each -> [1, pos, 1, rotary_dim] in the pairing's layout.
    const auto both = torch::stack({first, second}, interleaved ? 2 : 1);
    return both.reshape({1, -1, 1, rotary_dim}).to(torch::kFloat32);
  };
  const auto cos_both = per_member(cos, cos), sin_signed = per_member(-sin, sin);

  const auto rot = narrow_unless_whole(x, 3, 0, rotary_dim).to(torch::kFloat32);
  const auto sizes = rot.sizes();
  const auto pairs = interleaved ? rot.reshape({sizes[0], sizes[1], sizes[2], half, 2})
                                 : rot.reshape({sizes[0], sizes[1], sizes[2], 2, half});
  const auto swapped = pairs.flip({pair_dim}).reshape(sizes);
  auto rotated = (rot * cos_both + swapped * sin_signed).to(x.scalar_type());
  if (rotary_dim == d_head) return rotated;
  return torch::cat({rotated, x.narrow(3, rotary_dim, d_head - rotary_dim)}, 3);
}

RotaryEncoding::RotaryEncoding(double rope_theta, int64_t rotary_dim, int64_t d_head,
                               RopePairing pairing, RopeScaling scaling)
    : rope_theta_(rope_theta),
      rotary_dim_(rotary_dim),
      d_head_(d_head),
      pairing_(pairing),
      scaling_(std::move(scaling)) {
  rope_frequencies_scaled(rope_theta_, rotary_dim_, scaling_);  // reject bad parameters now
}

std::string RotaryEncoding::describe() const {
  std::ostringstream out;
  out << "RoPE (" << to_string(pairing_) << " pairs, rope_theta=" << rope_theta_;
  if (rotary_dim_ != d_head_) out << ", rotary_dim=" << rotary_dim_ << " of " << d_head_;
  if (scaling_.type == "proportional") {  // Gemma 4's global layers
    const auto f = rope_frequencies_scaled(rope_theta_, rotary_dim_, scaling_);
    out << ", proportional: " << f.inv_freq.ne(0).sum().item<int64_t>() << " of " << rotary_dim_ / 2
        << " components rotate";
    if (scaling_.factor != 1.0) out << " x" << scaling_.factor;
  } else if (scaling_.type != "default") {
    // yarn / longrope with an original length: HF's factor is max_position_embeddings / it.
    const auto& s = scaling_;
    const bool by_lengths = s.original_max_position_embeddings > 0 && s.type != "llama3" && s.max_position_embeddings > 0;
    out << ", rope_scaling=" << s.type << " x"
        << (by_lengths ? static_cast<double>(s.max_position_embeddings) / static_cast<double>(s.original_max_position_embeddings)
                       : s.factor);
    if (s.original_max_position_embeddings > 0) out << " of " << s.original_max_position_embeddings << " positions";
  }
  if (scaling_.drop_lowest_fraction > 0)
    out << ", p-RoPE: lowest " << p_rope_dropped_components(scaling_.drop_lowest_fraction, rotary_dim_) << " of "
        << rotary_dim_ / 2 << " components unrotated";
  out << ")";
  return out.str();
}

at::Tensor RotaryEncoding::rotate(const at::Tensor& x, const at::Tensor& positions) const {
  // One path for every scaling type ("default" gives theta_c); dynamic NTK and longrope depend
  // on the sequence length, so the frequencies are computed per call.
  const auto f = rope_frequencies_scaled(rope_theta_, rotary_dim_, scaling_, positions.size(0));
  return apply_rotation(x, positions, f.inv_freq, pairing_, f.attention_factor);
}

std::optional<RotaryInfo> RotaryEncoding::rotary_info(int64_t seq_len) const {
  const auto f = rope_frequencies_scaled(rope_theta_, rotary_dim_, scaling_, seq_len);
  return RotaryInfo{pairing_, rotary_dim_, d_head_, f.inv_freq.to(torch::kCPU, torch::kFloat64),
                    f.attention_factor, rotary_dim_ / 2};
}

ComponentRecipe rope_recipe(const PositionComponentSpec& spec, const PositionContext& c) {
  const ComponentParams p(spec, {"rope_theta", "pairing", "rotary_dim", "rope_scaling", "p_rope_drop"});
  const double theta = p.number("rope_theta", 10000.0);
  const int64_t rotary_dim = p.integer("rotary_dim", c.d_head), d_head = c.d_head;
  if (rotary_dim < 2 || rotary_dim > c.d_head || rotary_dim % 2)
    throw Error(p.where() + ": \"rotary_dim\" must be even and in [2, d_head=" +
                std::to_string(c.d_head) + "], got " + std::to_string(rotary_dim));
  if (!(theta > 0)) throw Error(p.where() + ": \"rope_theta\" must be positive");
  auto scaling = rope_scaling_from_hf(p.raw(), theta, rotary_dim, c.n_ctx, p.where());
  // p-RoPE, set by the run-time intervention (analysis/interventions.h), never by a checkpoint.
  scaling.drop_lowest_fraction = p.number("p_rope_drop", 0.0);
  try {
    p_rope_dropped_components(scaling.drop_lowest_fraction, rotary_dim);
  } catch (const Error& e) {
    throw Error(p.where() + ": \"p_rope_drop\": " + e.what());
  }
  const auto pairing = p.pairing();
  return {{}, [=](const PositionWeights&) {
            return std::make_unique<RotaryEncoding>(theta, rotary_dim, d_head, pairing, scaling);
          }};
}

}  // namespace poslens
