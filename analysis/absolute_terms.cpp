#include "analysis/absolute_terms.h"

#include <torch/torch.h>

#include "core/base/error.h"
#include "core/base/shape_text.h"

namespace poslens {

AbsoluteTerms absolute_terms(const Transformer& model, const at::Tensor& e, const at::Tensor& p) {
  const auto& c = model.config();
  if (e.dim() != 2 || e.sizes() != p.sizes() || e.size(1) != c.d_model)
    throw Error("absolute_terms: e and p must both be [pos, d_model=" + std::to_string(c.d_model) +
                "], got " + shape_str(e) + " and " + shape_str(p));
  c10::InferenceMode guard;
  const auto& w = model.weights().layers.at(0);
  const auto dev = model.device();
  const auto ef = e.to(dev, torch::kFloat), pf = p.to(dev, torch::kFloat), x = ef + pf;
  at::Tensor t, u, beta;
  if (c.norm == NormType::RMSNorm) {
    const auto r = (x.pow(2).mean(-1, true) + c.norm_eps).sqrt();
    const auto g = w.attn_norm.to(torch::kFloat) + c.norm_weight_offset;
    t = g * ef / r;
    u = g * pf / r;
  } else {
    const auto sigma = (x.var(-1, /*unbiased=*/false, /*keepdim=*/true) + c.norm_eps).sqrt();
    const auto g = w.attn_norm.defined() ? w.attn_norm.to(torch::kFloat) : torch::ones({c.d_model}, x.options());
    t = g * (ef - ef.mean(-1, true)) / sigma;
    u = g * (pf - pf.mean(-1, true)) / sigma;
    if (w.attn_norm_bias.defined()) beta = w.attn_norm_bias.to(torch::kFloat);
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
  const auto qt = heads(at::linear(t, wq), H), qu = heads(at::linear(u, wq), H);
  const auto kt = heads(at::linear(t, wk), Hkv), ku = heads(at::linear(u, wk), Hkv);
  const auto qb = heads(bias_of(wq, w.b_q), H), kb = heads(bias_of(wk, w.b_k), Hkv);
  const double scale = c.attention_scale();
  const auto dot = [&](const at::Tensor& a, const at::Tensor& b) {
    return (torch::matmul(a, b.transpose(-1, -2)) * scale).contiguous();
  };
  AbsoluteTerms out;
  out.token_token = dot(qt, kt);
  out.token_position = dot(qt, ku);
  out.position_token = dot(qu, kt);
  out.position_position = dot(qu, ku);
  out.bias = dot(qb, kt + ku + kb) + dot(qt + qu, kb);
  return out;
}

}  // namespace poslens
