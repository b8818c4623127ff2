#include "core/position/t5.h"

#include <torch/torch.h>

#include <cmath>
#include <string>

#include "core/base/error.h"
#include "core/position/component_params.h"

namespace poslens {

at::Tensor t5_relative_position_bucket(const at::Tensor& relative_position, bool bidirectional,
                                       int64_t num_buckets, int64_t max_distance) {
  if (!relative_position.defined() || relative_position.is_floating_point() ||
      relative_position.is_complex() || relative_position.scalar_type() == torch::kBool)
    throw Error("t5_relative_position_bucket: relative_position must be an integer tensor");
  const int64_t nb = bidirectional ? num_buckets / 2 : num_buckets;
  const int64_t max_exact = nb / 2;
  if (max_exact < 1)
    throw Error("t5_relative_position_bucket: num_buckets " + std::to_string(num_buckets) +
                " too small (need >= 2, or >= 4 when bidirectional)");
  if (max_distance <= max_exact)
    throw Error("t5_relative_position_bucket: max_distance " + std::to_string(max_distance) +
                " must exceed num_buckets/2 = " + std::to_string(max_exact));

  auto rel = relative_position.to(torch::kLong);
  auto buckets = torch::zeros_like(rel);
  at::Tensor n;
  if (bidirectional) {
    buckets = buckets + (rel > 0).to(torch::kLong) * nb;
    n = rel.abs();
  } else {
    n = (-rel).clamp_min(0);
  }
  const auto is_small = n < max_exact;
  // The logarithmic branch in float32, as HF; n is clamped to max_exact first so that log(0)
  // (only in entries that take the exact branch anyway) never reaches the integer cast.
  const auto n_large = n.clamp_min(max_exact).to(torch::kFloat32);
  const auto log_ratio = torch::log(n_large / static_cast<float>(max_exact));
  const float log_range = static_cast<float>(
      std::log(static_cast<double>(max_distance) / static_cast<double>(max_exact)));
  auto large = (log_ratio / log_range * static_cast<float>(nb - max_exact)).to(torch::kLong) +
               max_exact;
  large = large.clamp_max(nb - 1);
  return buckets + torch::where(is_small, n, large);
}

at::Tensor t5_bias(const at::Tensor& table, int64_t q_len, int64_t k_len, bool bidirectional,
                   int64_t num_buckets, int64_t max_distance) {
  if (q_len < 1 || k_len < 1 || q_len > k_len)
    throw Error("t5_bias: need 1 <= q_len <= k_len, got q_len=" + std::to_string(q_len) +
                ", k_len=" + std::to_string(k_len));
  const auto [i, j] = last_queries_positions(q_len, k_len);
  return t5_bias(table.to(torch::kCPU), i, j, bidirectional, num_buckets, max_distance)
      .to(table.device());
}

at::Tensor t5_bias(const at::Tensor& table, const at::Tensor& i, const at::Tensor& j,
                   bool bidirectional, int64_t num_buckets, int64_t max_distance) {
  if (!table.defined() || table.dim() != 2 || table.size(0) != num_buckets)
    throw Error("t5_bias: table must be [num_buckets=" + std::to_string(num_buckets) +
                ", n_heads]");
  const auto buckets = t5_relative_position_bucket(j.unsqueeze(0) - i.unsqueeze(1), bidirectional,
                                                   num_buckets, max_distance);  // [q, k]
  const auto t = table.to(i.device(), torch::kFloat32).t().contiguous();        // [H, buckets]
  // [H, q·k] gathered by bucket: one pass over the block, whatever the head count.
  return t.index_select(1, buckets.flatten()).view({t.size(0), i.size(0), j.size(0)});
}

T5BiasEncoding::T5BiasEncoding(std::vector<at::Tensor> tables, bool bidirectional,
                               int64_t num_buckets, int64_t max_distance, bool shared)
    : tables_(std::move(tables)),
      bidirectional_(bidirectional),
      num_buckets_(num_buckets),
      max_distance_(max_distance),
      shared_(shared) {
  // Validates the bucket arguments once.
  t5_relative_position_bucket(torch::zeros({1}, torch::kLong), bidirectional_, num_buckets_,
                              max_distance_);
}

std::string T5BiasEncoding::describe() const {
  return "T5 bucket bias (" + std::to_string(num_buckets_) + " buckets, max_distance=" +
         std::to_string(max_distance_) + (bidirectional_ ? ", bidirectional" : ", causal") + ", " +
         describe_sharing(shared_) + ")";
}

at::Tensor T5BiasEncoding::bias(int layer, int64_t head_begin, int64_t n_heads,
                                const at::Tensor& i, const at::Tensor& j) const {
  auto table = tables_.at(static_cast<size_t>(layer));
  if (n_heads >= 0) table = table.narrow(1, head_begin, n_heads);
  return t5_bias(table, i, j, bidirectional_, num_buckets_, max_distance_);
}

ComponentRecipe t5_recipe(const PositionComponentSpec& spec, const PositionContext& c) {
  const ComponentParams p(spec, {"num_buckets", "max_distance", "shared"});
  const int64_t buckets = p.integer("num_buckets", 32), max_distance = p.integer("max_distance", 128);
  const bool shared = p.flag("shared", true), bidirectional = !c.causal;
  T5BiasEncoding check({}, bidirectional, buckets, max_distance, shared);  // bucket arguments
  // Init: N(0, d_model^-1), HF T5PreTrainedModel._init_weights (factor 1).
  const WeightInit init{WeightInit::Kind::Normal, 1.0 / std::sqrt(static_cast<double>(c.d_model))};
  return {{{"t5_bias", {buckets, c.n_heads}, !shared, false, init}}, [=](const PositionWeights& w) {
            return std::make_unique<T5BiasEncoding>(w.per_layer("t5_bias", shared), bidirectional,
                                                    buckets, max_distance, shared);
          }};
}

}  // namespace poslens
