#include "core/pe_relative.h"

#include <torch/torch.h>

#include "core/error.h"
#include "core/shape_text.h"
#include "core/shaw.h"
#include "core/sinusoidal.h"
#include "core/transformer_xl.h"

namespace poslens {

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

TransformerXlEncoding::TransformerXlEncoding(std::vector<TxlWeights> layers, int64_t n_heads,
                                             int64_t d_head, bool causal, bool shared)
    : layers_(std::move(layers)), n_heads_(n_heads), d_head_(d_head), causal_(causal), shared_(shared) {
  for (const auto& w : layers_) {
    if (!w.r_proj.defined() || !w.u.defined() || !w.v.defined())
      throw Error("transformer_xl position encoding: a weight is missing");
    if (w.r_proj.dim() != 2 || w.r_proj.size(0) != n_heads * d_head ||
        w.u.sizes() != at::IntArrayRef{n_heads, d_head} || w.v.sizes() != w.u.sizes())
      throw Error("transformer_xl position encoding: expected W_R [" +
                  std::to_string(n_heads * d_head) + ", d_model] and u, v [" +
                  std::to_string(n_heads) + ", " + std::to_string(d_head) + "], got " +
                  shape_str(w.r_proj) + ", " + shape_str(w.u) + ", " + shape_str(w.v));
  }
}

std::string TransformerXlEncoding::describe() const {
  return std::string("Transformer-XL relative (") + (causal_ ? "causal" : "bi-directional") +
         (shared_ ? ", shared across layers" : ", per layer") + ")";
}

void TransformerXlEncoding::add_score_terms(const AttentionInputs& in, ScoreTerms& out) const {
  const auto& w = layers_.at(static_cast<size_t>(in.layer));
  const int64_t T = in.qk.size(-1), d_model = w.r_proj.size(1);
  const auto f32 = torch::kFloat32;
  const auto q = in.q.to(f32);
  const auto u = w.u.to(f32), v = w.v.to(f32);
  const auto w_r = w.r_proj.to(f32);
  // W_R R per head: [H, T, d_head], rows ordered as the table asks.
  auto project = [&](const at::Tensor& r) {
    return at::linear(r.to(q.device()), w_r).view({T, n_heads_, d_head_}).permute({1, 0, 2});
  };
  at::Tensor position;
  if (causal_) {
    position = txl_position_scores(q, project(txl_relative_embedding(T, d_model)), v, in.scale);
  } else {
    const auto ascending = sinusoidal_embedding(torch::arange(T, torch::kFloat64), d_model,
                                                SinusoidalLayout::Concatenated);
    position = relative_scores_bidirectional(q + v.view({1, n_heads_, 1, d_head_}),
                                             project(ascending)) * in.scale;
  }
  ScoreTerms::add(out.position, position);
  // u·k_j: the same for every query (a per-key content bias).
  const auto uk = torch::matmul(u.view({1, n_heads_, 1, d_head_}), in.k.to(f32).transpose(-1, -2));
  ScoreTerms::add(out.content, uk * in.scale);
}

}  // namespace poslens
