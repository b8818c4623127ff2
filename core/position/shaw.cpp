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
  return shaw_relative_index(torch::arange(k_len - q_len, k_len, opts), torch::arange(k_len, opts),
                             k_max);
}

at::Tensor shaw_relative_index(const at::Tensor& i, const at::Tensor& j, int64_t k_max) {
  if (k_max < 0) throw Error("shaw_relative_index: need k_max >= 0, got " + std::to_string(k_max));
  return (i.unsqueeze(1) - j.to(i.device()).unsqueeze(0)).clamp(0, k_max);
}

at::Tensor shaw_key_scores(const at::Tensor& q, const at::Tensor& e, int64_t k_len) {
  if (q.dim() != 4 || q.size(2) > k_len)
    throw Error("shaw_key_scores: need q [B, H, Q, d] with Q <= k_len=" + std::to_string(k_len) +
                ", got " + shape_str(q));
  const auto opts = torch::TensorOptions().dtype(torch::kLong).device(q.device());
  return shaw_key_scores(q, e, torch::arange(k_len - q.size(2), k_len, opts),
                         torch::arange(k_len, opts));
}

at::Tensor shaw_key_scores(const at::Tensor& q, const at::Tensor& e, const at::Tensor& i,
                           const at::Tensor& j) {
  if (q.dim() != 4 || e.dim() != 2 || e.size(1) != q.size(3) || e.size(0) < 1 ||
      i.dim() != 1 || i.size(0) != q.size(2) || j.dim() != 1)
    throw Error("shaw_key_scores: need q [B, H, Q, d], e [k_max + 1, d], i [Q] and j [K], got " +
                shape_str(q) + ", " + shape_str(e) + ", " + shape_str(i) + " and " + shape_str(j));
  const auto index = shaw_relative_index(i.to(q.device()), j, e.size(0) - 1);
  const auto z = torch::matmul(q, e.to(q.scalar_type()).t());  // [B, H, Q, k_max + 1]
  return z.gather(3, index.expand({q.size(0), q.size(1), q.size(2), j.size(0)}));
}

at::Tensor shaw_value_term(const at::Tensor& attn, const at::Tensor& ev) {
  if (attn.dim() != 4 || attn.size(2) > attn.size(3))
    throw Error("shaw_value_term: need attn [B, H, Q, K] with Q <= K, got " + shape_str(attn));
  const int64_t q_len = attn.size(2), k_len = attn.size(3);
  const auto opts = torch::TensorOptions().dtype(torch::kLong).device(attn.device());
  return shaw_value_term(attn, ev, torch::arange(k_len - q_len, k_len, opts),
                         torch::arange(k_len, opts));
}

at::Tensor shaw_value_term(const at::Tensor& attn, const at::Tensor& ev, const at::Tensor& i,
                           const at::Tensor& j) {
  if (attn.dim() != 4 || ev.dim() != 2 || ev.size(0) < 1 || i.dim() != 1 ||
      i.size(0) != attn.size(2) || j.dim() != 1 || j.size(0) != attn.size(3))
    throw Error("shaw_value_term: need attn [B, H, Q, K], ev [k_max + 1, d_v], i [Q] and j [K], "
                "got " + shape_str(attn) + ", " + shape_str(ev) + ", " + shape_str(i) + " and " +
                shape_str(j));
  const int64_t n_rel = ev.size(0);
  const auto index = shaw_relative_index(i.to(attn.device()), j, n_rel - 1)
                         .expand(attn.sizes());
  // Weights summed per distance bucket, then times the table: O(Q·K) + O(Q·k_max·d).
  const auto per_bucket =
      torch::zeros({attn.size(0), attn.size(1), attn.size(2), n_rel}, attn.options())
          .scatter_add(3, index.contiguous(), attn);
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
  const auto raw =
      shaw_key_scores(in.q.to(torch::kFloat32), e.to(torch::kFloat32), in.q_pos, in.k_pos);
  ScoreTerms::add(out.position, raw * in.scale);
}

at::Tensor ShawEncoding::value_term(const AttentionInputs& in, const at::Tensor& weights) const {
  if (values_.empty()) return {};
  return shaw_value_term(weights, values_.at(static_cast<size_t>(in.layer)).to(torch::kFloat32),
                         in.q_pos, in.k_pos);
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
