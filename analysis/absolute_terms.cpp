#include "analysis/absolute_terms.h"

#include <torch/torch.h>

#include "core/base/error.h"
#include "core/base/shape_text.h"

namespace poslens {

AbsoluteTermsBlocks::AbsoluteTermsBlocks(const Transformer& model, const at::Tensor& e,
                                         const at::Tensor& p) {
  const auto& c = model.config();
  if (e.dim() != 2 || e.sizes() != p.sizes() || e.size(1) != c.d_model)
    throw Error("absolute_terms: e and p must both be [pos, d_model=" + std::to_string(c.d_model) +
                "], got " + shape_str(e) + " and " + shape_str(p));
  c10::InferenceMode guard;
  const auto& w = model.weights().layers.at(0);
  const auto dev = model.device();
  auto ef = e.to(dev, torch::kFloat);
  const auto pf = p.to(dev, torch::kFloat);
  // BERT: the token-type embedding (type 0, as every run here) is on the token side.
  if (model.weights().token_type_embed.defined())
    ef = ef + model.weights().token_type_embed[0].to(dev, torch::kFloat);
  if (c.embed_norm && c.norm_placement == NormPlacement::Pre)
    throw Error("absolute_terms: a pre-norm model with an embedding norm has two norms in front "
                "of layer 0; the four-term split is not defined for it");
  const auto in = model.attention_input_norm(0);  // pre-norm: ln_1; BERT: embeddings.LayerNorm
  const auto x = ef + pf;
  at::Tensor t, u, beta;
  if (!in.present) {
    t = ef;
    u = pf;
  } else if (c.norm == NormType::RMSNorm) {
    const auto r = (x.pow(2).mean(-1, true) + c.norm_eps).sqrt();
    const auto g = in.weight.to(torch::kFloat) + c.norm_weight_offset;
    t = g * ef / r;
    u = g * pf / r;
  } else {
    const auto sigma = (x.var(-1, /*unbiased=*/false, /*keepdim=*/true) + c.norm_eps).sqrt();
    const auto g = in.weight.defined() ? in.weight.to(torch::kFloat) : torch::ones({c.d_model}, x.options());
    t = g * (ef - ef.mean(-1, true)) / sigma;
    u = g * (pf - pf.mean(-1, true)) / sigma;
    if (in.bias.defined()) beta = in.bias.to(torch::kFloat);
  }
  const int64_t T = e.size(0), H = c.n_heads, Hkv = c.n_kv_heads, dh = c.d_head;
  const auto wq = w.w_q.to(torch::kFloat), wk = w.w_k.to(torch::kFloat);
  // [T, d_model] -> [H, T, dh], kv heads repeated as the forward does.
  const auto heads = [&](const at::Tensor& y, int64_t n) {
    auto out = y.expand({T, y.size(-1)}).reshape({T, n, dh}).transpose(0, 1);
    return n == H ? out : out.repeat_interleave(H / n, 0);
  };
  const auto bias_of = [&](const at::Tensor& weight, const at::Tensor& b) {
    at::Tensor out = torch::zeros({weight.size(0)}, x.options());
    if (beta.defined()) out = out + at::linear(beta, weight);
    if (b.defined()) out = out + b.to(torch::kFloat);
    return out.unsqueeze(0);
  };
  qt_ = heads(at::linear(t, wq), H).contiguous();
  qu_ = heads(at::linear(u, wq), H).contiguous();
  kt_ = heads(at::linear(t, wk), Hkv).contiguous();
  ku_ = heads(at::linear(u, wk), Hkv).contiguous();
  qb_ = heads(bias_of(wq, w.b_q), H).contiguous();
  kb_ = heads(bias_of(wk, w.b_k), Hkv).contiguous();
  scale_ = c.attention_scale();
}

AbsoluteTerms AbsoluteTermsBlocks::block(int64_t head, int64_t q0, int64_t q1, int64_t k0,
                                         int64_t k1) const {
  const auto rows = [&](const at::Tensor& x) { return x[head].narrow(0, q0, q1 - q0); };
  const auto keys = [&](const at::Tensor& x) { return x[head].narrow(0, k0, k1 - k0); };
  const auto dot = [&](const at::Tensor& a, const at::Tensor& b) {
    return (torch::matmul(a, b.t()) * scale_).contiguous();
  };
  AbsoluteTerms out;
  out.token_token = dot(rows(qt_), keys(kt_));
  out.token_position = dot(rows(qt_), keys(ku_));
  out.position_token = dot(rows(qu_), keys(kt_));
  out.position_position = dot(rows(qu_), keys(ku_));
  out.bias = dot(rows(qb_), keys(kt_) + keys(ku_) + keys(kb_)) + dot(rows(qt_) + rows(qu_), keys(kb_));
  return out;
}

AbsoluteTerms absolute_terms(const Transformer& model, const at::Tensor& e, const at::Tensor& p) {
  c10::InferenceMode guard;
  const AbsoluteTermsBlocks blocks(model, e, p);
  const int64_t T = e.size(0);
  std::vector<AbsoluteTerms> heads;
  for (int64_t h = 0; h < model.config().n_heads; ++h) heads.push_back(blocks.block(h, 0, T, 0, T));
  const auto stack = [&](at::Tensor AbsoluteTerms::*term) {
    std::vector<at::Tensor> parts;
    for (const auto& h : heads) parts.push_back(h.*term);
    return torch::stack(parts);
  };
  return {stack(&AbsoluteTerms::token_token), stack(&AbsoluteTerms::token_position),
          stack(&AbsoluteTerms::position_token), stack(&AbsoluteTerms::position_position),
          stack(&AbsoluteTerms::bias)};
}

}  // namespace poslens
