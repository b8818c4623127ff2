#include "core/position/shaw.h"

#include <torch/torch.h>

#include <cmath>

#include <string>

#include "core/base/error.h"
#include "core/base/shape_text.h"
#include "core/position/component_params.h"

namespace poslens {

at::Tensor shaw_relative_index(int64_t q_len, int64_t k_len, int64_t k_max, const at::Device& device) {
  if (k_max < 0 || q_len < 0 || q_len > k_len)
    throw Error("shaw_relative_index: need k_max >= 0 and 0 <= q_len <= k_len, got k_max=" +
                std::to_string(k_max) + " q_len=" + std::to_string(q_len) +
                " k_len=" + std::to_string(k_len));
  const auto opts = torch::TensorOptions().dtype(torch::kLong).device(device);
  const auto dist = torch::arange(q_len, opts).unsqueeze(1) + (k_len - q_len) -
                    torch::arange(k_len, opts).unsqueeze(0);
  return dist.clamp_min(0).clamp_max(k_max);
}

at::Tensor shaw_key_scores(const at::Tensor& q, const at::Tensor& e, int64_t k_len) {
  if (q.dim() != 4 || e.dim() != 2 || e.size(1) != q.size(3) || e.size(0) < 1)
    throw Error("shaw_key_scores: need q [B, H, Q, d] and e [k_max + 1, d], got " + shape_str(q) +
                " and " + shape_str(e));
  if (q.size(2) > k_len)
    throw Error("shaw_key_scores: query length " + std::to_string(q.size(2)) + " > k_len " +
                std::to_string(k_len));
  const auto index = shaw_relative_index(q.size(2), k_len, e.size(0) - 1, q.device());
  const auto z = torch::matmul(q, e.to(q.scalar_type()).t());  // [B, H, Q, k_max + 1]
  return z.gather(3, index.expand({q.size(0), q.size(1), q.size(2), k_len}));
}

at::Tensor shaw_value_term(const at::Tensor& attn, const at::Tensor& ev) {
  if (attn.dim() != 4 || ev.dim() != 2 || ev.size(0) < 1)
    throw Error("shaw_value_term: need attn [B, H, Q, K] and ev [k_max + 1, d_v], got " +
                shape_str(attn) + " and " + shape_str(ev));
  const int64_t q_len = attn.size(2), k_len = attn.size(3), n_rel = ev.size(0);
  if (q_len > k_len)
    throw Error("shaw_value_term: query length " + std::to_string(q_len) + " > key length " +
                std::to_string(k_len));
  const auto index = shaw_relative_index(q_len, k_len, n_rel - 1, attn.device())
                         .expand({attn.size(0), attn.size(1), q_len, k_len});
  const auto per_bucket = torch::zeros({attn.size(0), attn.size(1), q_len, n_rel}, attn.options())
                              .scatter_add_(3, index.contiguous(), attn);
  return torch::matmul(per_bucket, ev.to(attn.scalar_type()));
}

ShawEncoding::ShawEncoding(std::vector<at::Tensor> key_tables, std::vector<at::Tensor> value_tables,
                           bool shared)
    : keys_(std::move(key_tables)), values_(std::move(value_tables)), shared_(shared) {
  if (keys_.empty()) throw Error("shaw position encoding: no key tables");
}

std::string ShawEncoding::describe() const {
  return "Shaw relative (max_distance=" + std::to_string(keys_.front().size(0) - 1) +
         (values_.empty() ? ", keys" : ", keys and values") +
         (shared_ ? ", shared across layers" : ", per layer") + ")";
}

void ShawEncoding::add_score_terms(const AttentionInputs& in, ScoreTerms& out) const {
  const auto& e = keys_.at(static_cast<size_t>(in.layer));
  const auto raw = shaw_key_scores(in.q.to(torch::kFloat32), e.to(torch::kFloat32), in.qk.size(-1));
  ScoreTerms::add(out.position, raw * in.scale);
}

at::Tensor ShawEncoding::value_term(int layer, const at::Tensor& pattern) const {
  if (values_.empty()) return {};
  return shaw_value_term(pattern, values_.at(static_cast<size_t>(layer)).to(torch::kFloat32));
}

ComponentRecipe shaw_recipe(const PositionComponentSpec& spec, const PositionContext& c) {
  const ComponentParams p(spec, {"max_distance", "values", "shared"});
  p.require_causal(c);
  const int64_t k = p.required_integer("max_distance");
  p.at_least("max_distance", k, 0);
  const bool values = p.flag("values", false), shared = p.flag("shared", false);
  // Init: Glorot-uniform over the [k+1, d_head] table, tensor2tensor's default initializer for
  // its relative-position embedding variables (Shaw et al.'s implementation).
  const double bound = std::sqrt(6.0 / static_cast<double>(k + 1 + c.d_head));
  const WeightInit glorot{WeightInit::Kind::Uniform, -bound, bound};
  std::vector<PeWeightSpec> weights{{"shaw_key", {k + 1, c.d_head}, !shared, false, glorot}};
  if (values) weights.push_back({"shaw_value", {k + 1, c.d_head}, !shared, false, glorot});
  return {weights, [=](const PositionWeights& w) {
            return std::make_unique<ShawEncoding>(
                w.per_layer("shaw_key", shared),
                values ? w.per_layer("shaw_value", shared) : std::vector<at::Tensor>{}, shared);
          }};
}

}  // namespace poslens
