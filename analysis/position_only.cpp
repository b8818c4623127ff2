#include "analysis/position_only.h"

#include <torch/torch.h>

#include <limits>

#include "analysis/probe.h"
#include "core/base/error.h"

namespace poslens {

std::string position_only_method(const LoadedModel& model, int64_t T) {
  const auto& pe = model.model->position_encoding();
  const bool rotary = pe.rotary_info(T).has_value() && T >= 2;
  if (pe.has_position_scores())
    return std::string(pe.has_cope() ? "cope" : "additive") + (rotary ? "+rotary" : "");
  if (rotary) return "rotary";
  if (!pe.has_pe_state() && pe.position_table(1).defined()) return "absolute";
  return "uniform";
}

PositionOnlyLogits::PositionOnlyLogits(const LoadedModel& model, int64_t T,
                                       const PositionMapOptions& options, const Progress& progress)
    : model_(model), T_(T), method_(position_only_method(model, T)) {
  const auto& pe = model.model->position_encoding();
  rotary_ = pe.rotary_info(T).has_value() && T >= 2;
  additive_ = pe.has_position_scores();
  absolute_ = method_ == "absolute";
  if (absolute_) position_table_ = pe.position_table(T).unsqueeze(0);
  if (rotary_) {
    ProbeOptions probe;
    probe.length = T;
    probe.samples = options.probe_samples;
    probe.seed = options.seed;
    probe.per_component = false;  // only the sum over components is read below
    const auto p = run_probe(model, probe, progress.counter());
    // The rotary part of the probe's logits (components + remainder: for rotary models without
    // an added term that is the whole logit; additive models add their own term from this
    // input). A NoPE layer has no components: its map is its mask alone. Key T−1−d sits at
    // distance d from the probe's last query.
    auto by_key = p.components.sum(2);
    if (p.remainder.defined()) by_key = by_key + p.remainder;
    rotary_by_distance_ = by_key.flip(-1).to(model.model->device());
  }
}

std::string position_only_explanation(const LoadedModel& model, int64_t T) {
  const auto& pe = model.model->position_encoding();
  const std::string method = position_only_method(model, T);
  const bool rotary = method.find("rotary") != std::string::npos;
  std::string text;
  if (method == "uniform")
    text = "No position-only term (" + pe.describe() + "): uniform over the keys each query may see";
  else if (method == "absolute")
    text = "Absolute positions: each layer fed the position embeddings alone (no tokens) through "
           "its attention norm and q/k projections, softmax(scale·q(P_i)·k(P_j)); exact for layer 0";
  else if (method == "rotary")
    text = "Rotary: softmax of f(i−j), the head's mean logit by distance from the U-shape probe "
           "([BOS] + one token repeated, T = the input length)";
  else
    text = "Position term as it enters the logits (hook_pos_scores" +
           std::string(pe.has_cope() ? ", CoPE's z_i[p_ij] for this input's contextual positions" : "") +
           ")" + (rotary ? " plus the rotary part from the U-shape probe" : "") +
           ", softmax over allowed keys";
  if (model.model->config().per_layer_schemes())
    text += " (each layer's own window and encoding; a NoPE layer's map is its mask alone)";
  return text + "; each row scaled to max 1";
}

at::Tensor PositionOnlyLogits::logits(int layer, int head, int64_t q0, int64_t q1, int64_t k0,
                                      int64_t k1, const at::Tensor& position_term) const {
  const auto& cfg = model_.model->config();
  if (layer < 0 || layer >= cfg.n_layers || head < 0 || head >= cfg.n_heads)
    throw Error("no layer " + std::to_string(layer) + ", head " + std::to_string(head));
  const auto dev = model_.model->device();
  const auto f32 = torch::dtype(torch::kFloat32).device(dev);
  at::Tensor out = torch::zeros({q1 - q0, k1 - k0}, f32);
  if (additive_) {
    if (!position_term.defined()) throw Error("internal: the position term of the block is missing");
    out = out + position_term.to(dev, torch::kFloat32);
  }
  if (rotary_) {
    const auto i = torch::arange(q0, q1, torch::dtype(torch::kLong).device(dev)).unsqueeze(1);
    const auto j = torch::arange(k0, k1, torch::dtype(torch::kLong).device(dev)).unsqueeze(0);
    const auto distance = (i - j).clamp_min(0);
    out = out + rotary_by_distance_[layer][head].index_select(0, distance.flatten()).view(out.sizes());
  }
  if (absolute_) {
    auto it = position_qk_.find(layer);
    if (it == position_qk_.end())
      it = position_qk_.emplace(layer, model_.model->qk_projections(layer, position_table_)).first;
    const auto& [q, k] = it->second;  // [1, H, T, dh]
    out = torch::matmul(q[0][head].narrow(0, q0, q1 - q0), k[0][head].narrow(0, k0, k1 - k0).t()) *
          cfg.attention_scale();
  }
  return out;
}

at::Tensor row_normalised_softmax(const at::Tensor& logits, const at::Tensor& allowed) {
  const auto masked = logits.to(torch::kFloat).masked_fill(allowed.logical_not(),
                                                            -std::numeric_limits<float>::infinity());
  auto p = torch::softmax(masked, -1);
  p = torch::nan_to_num(p, 0.0);  // rows without an allowed key
  return row_max_normalised(p);
}

at::Tensor row_max_normalised(const at::Tensor& pattern) {
  const auto p = pattern.to(torch::kFloat);
  const auto max = std::get<0>(p.max(-1, true));
  return torch::where(max > 0, p / max.clamp_min(1e-30), torch::zeros_like(p));
}

}  // namespace poslens
