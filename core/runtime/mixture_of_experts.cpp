#include "core/runtime/mixture_of_experts.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/runtime/blocks.h"

namespace poslens::blocks {
namespace {

/// gpt-oss's expert activation (HF GptOssExperts._apply_gate): g = min(gate, limit),
/// u = clamp(up, ±limit), (u + 1) · g·σ(1.702·g).
at::Tensor clamped_swiglu(const at::Tensor& gate, const at::Tensor& up, double limit) {
  const auto g = gate.clamp_max(limit);
  return (up.clamp(-limit, limit) + 1) * (g * torch::sigmoid(g * 1.702));
}

/// One expert's activation (ModelConfig::expert_activation) of its gate and up columns, held
/// interleaved in `gate_up` [tokens, 2·d_mlp] (LayerWeights::experts_gate_up).
at::Tensor expert_activation(const ModelConfig& c, const at::Tensor& gate_up) {
  using torch::indexing::Slice;
  const auto gate = gate_up.index({Slice(), Slice(0, torch::indexing::None, 2)});
  const auto up = gate_up.index({Slice(), Slice(1, torch::indexing::None, 2)});
  if (c.expert_activation == ExpertActivation::ClampedSwiGLU) return clamped_swiglu(gate, up, c.swiglu_limit);
  return activation(c.activation, gate) * up;
}

/// `x` [n, in] times W [in, out], plus the bias [out] where the expert has one.
at::Tensor expert_linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  return bias.defined() ? torch::addmm(bias, x, weight) : x.mm(weight);
}

/// bool [tokens, n_experts]: the experts of the c.topk_expert_groups groups with the largest
/// `group_scores` [tokens, n_expert_groups] (HF's group mask).
at::Tensor kept_groups(const ModelConfig& c, const at::Tensor& group_scores) {
  const auto best = std::get<1>(group_scores.topk(c.topk_expert_groups, -1));
  const auto keep = torch::zeros_like(group_scores, torch::kBool).scatter_(1, best, true);
  return keep.unsqueeze(-1).expand({-1, c.n_expert_groups, c.n_experts / c.n_expert_groups}).reshape({-1, c.n_experts});
}

/// DeepSeek-V2's routing (ExpertRouting::SoftmaxAll; HF DeepseekV2TopkRouter).
ExpertChoice softmax_all(const ModelConfig& c, const at::Tensor& logits) {
  auto scores = torch::softmax(logits, -1);
  if (c.n_expert_groups > 1) {
    const auto group_best = std::get<0>(scores.view({-1, c.n_expert_groups, c.n_experts / c.n_expert_groups}).max(-1));
    scores = scores.masked_fill(kept_groups(c, group_best).logical_not(), 0.0);
  }
  auto [weights, experts] = scores.topk(c.n_experts_per_token, -1);
  return {experts, weights * c.routed_scaling_factor};
}

/// DeepSeek-V3's routing (ExpertRouting::SigmoidBiased; HF DeepseekV3TopkRouter).
ExpertChoice sigmoid_biased(const ModelConfig& c, const LayerWeights& w, const at::Tensor& logits) {
  const auto scores = torch::sigmoid(logits);
  auto choice = w.router_score_bias.defined() ? scores + w.router_score_bias.to(torch::kFloat32) : scores;
  if (c.n_expert_groups > 1) {
    const int64_t per_group = c.n_experts / c.n_expert_groups;
    const auto two_best = std::get<0>(choice.view({-1, c.n_expert_groups, per_group}).topk(std::min<int64_t>(2, per_group), -1));
    choice = choice.masked_fill(kept_groups(c, two_best.sum(-1)).logical_not(), -std::numeric_limits<float>::infinity());
  }
  const auto experts = std::get<1>(choice.topk(c.n_experts_per_token, -1));
  auto weights = scores.gather(1, experts);
  if (c.norm_topk_prob) weights = weights / (weights.sum(-1, /*keepdim=*/true) + 1e-20);
  return {experts, weights * c.routed_scaling_factor};
}

/// Gemma 4's routing (ExpertRouting::ScaledSoftmaxAll; HF Gemma4TextRouter): its input normed
/// without a gain, times router_scale and d_model^−½ in the model's dtype; the softmax in
/// float32; the top k renormalised, times their per_expert_scale.
ExpertChoice scaled_softmax_all(const ModelConfig& c, const LayerWeights& w, const at::Tensor& x) {
  const auto in = unit_rms(x, c.norm_eps) * w.router_scale * std::pow(static_cast<double>(c.d_model), -0.5);
  const auto p = torch::softmax(at::linear(in, w.router), -1, torch::kFloat32);
  auto [weights, experts] = p.topk(c.n_experts_per_token, -1);
  weights = weights / weights.sum(-1, /*keepdim=*/true);
  return {experts, weights * w.per_expert_scale.index({experts})};
}

}  // namespace

ExpertChoice route_tokens(const ModelConfig& c, const LayerWeights& w, const at::Tensor& x) {
  if (c.expert_routing == ExpertRouting::SoftmaxAll || c.expert_routing == ExpertRouting::SigmoidBiased) {
    // HF DeepSeek: the router's logits in float32 whatever the model's dtype.
    const auto logits = at::linear(x.to(torch::kFloat32), w.router.to(torch::kFloat32));
    return c.expert_routing == ExpertRouting::SoftmaxAll ? softmax_all(c, logits) : sigmoid_biased(c, w, logits);
  }
  if (c.expert_routing == ExpertRouting::ScaledSoftmaxAll) return scaled_softmax_all(c, w, x);
  const auto router_logits = at::linear(x, w.router, w.router_bias);  // [N, E]
  const auto [top_logits, top_experts] = router_logits.topk(c.n_experts_per_token, -1);
  // HF Llama4Router: σ in float32, back to the model's dtype.
  if (c.expert_routing == ExpertRouting::SigmoidOnInput)
    return {top_experts, torch::sigmoid(top_logits.to(torch::kFloat32)).to(x.scalar_type())};
  return {top_experts, torch::softmax(top_logits, -1)};
}

at::Tensor mixture_of_experts(const ModelConfig& c, const LayerWeights& w, const at::Tensor& h) {
  const auto x = h.reshape({-1, c.d_model});
  const auto [top_experts, top_weights] = route_tokens(c, w, x);
  const bool on_input = c.expert_routing == ExpertRouting::SigmoidOnInput;
  // Gemma 4: the experts read x through their own norm; the shared expert is added below.
  const auto experts_in = c.experts_beside_mlp ? norm(c, x, w.experts_norm, {}) : x;
  auto out = c.shared_expert && !c.experts_beside_mlp ? gated_mlp(c, w, x) : torch::zeros_like(x);
  // Experts some token chose, read on the host once per chunk.
  const auto chosen = std::get<0>(at::_unique(top_experts.flatten())).to(torch::kCPU);
  const auto bias = [](const at::Tensor& b, int64_t e) { return b.defined() ? b[e] : b; };
  for (int64_t i = 0; i < chosen.numel(); ++i) {
    const int64_t e = chosen[i].item<int64_t>();
    const auto where = (top_experts == e).nonzero();  // [n, 2]: token, slot
    const auto tokens = where.select(1, 0), slots = where.select(1, 1);
    const auto weight = top_weights.index({tokens, slots}).unsqueeze(-1);
    auto in = experts_in.index_select(0, tokens);
    if (on_input) in = in * weight;
    const auto gate_up = expert_linear(in, w.experts_gate_up[e], bias(w.experts_gate_up_bias, e));
    const auto y = expert_linear(expert_activation(c, gate_up), w.experts_down[e], bias(w.experts_down_bias, e));
    // DeepSeek's float32 weights: the product in float32, cast once (HF DeepseekV3Experts).
    out.index_add_(0, tokens, on_input ? y : (y * weight).to(out.scalar_type()));
  }
  if (c.experts_beside_mlp)  // HF Gemma4TextDecoderLayer: post_1(mlp(pre(x))) + post_2(experts(pre_2(x)))
    out = norm(c, gated_mlp(c, w, norm(c, x, w.mlp_norm, {})), w.shared_expert_post_norm, {}) +
          norm(c, out, w.experts_post_norm, {});
  return out.view(h.sizes());
}

}  // namespace poslens::blocks
