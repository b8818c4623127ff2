#include "analysis/frequency_usage.h"

#include <torch/torch.h>

#include <limits>

#include "analysis/probe.h"
#include "core/base/error.h"
#include "core/base/shape_text.h"
#include "core/runtime/model_input.h"

namespace poslens {

at::Tensor FrequencyUsage::q_layer_mean() const { return q_norm.mean(1); }
at::Tensor FrequencyUsage::k_layer_mean() const { return k_norm.mean(1); }

at::Tensor chunk_norms(const at::Tensor& x, const RotaryInfo& rotary) {
  const int64_t half = rotary.rotary_dim / 2;
  if (x.dim() != 4 || x.size(3) != rotary.d_head || half < 1 || rotary.rotary_dim > rotary.d_head)
    throw Error("frequency usage: q/k must be [batch, head, pos, d_head=" + std::to_string(rotary.d_head) +
                "] with rotary_dim " + std::to_string(rotary.rotary_dim) + ", got " + shape_str(x));
  const auto r = x.detach().narrow(3, 0, rotary.rotary_dim).to(torch::kFloat32);
  at::Tensor a, b;  // the two coordinates of each component's chunk, [batch, head, pos, half]
  if (rotary.pairing == RopePairing::Interleaved) {
    const auto pairs = r.unflatten(3, {half, 2});
    a = pairs.select(4, 0);
    b = pairs.select(4, 1);
  } else {
    a = r.narrow(3, 0, half);
    b = r.narrow(3, half, half);
  }
  const auto norm = (a * a + b * b).sqrt().to(torch::kDouble);  // float64 before the mean over T
  return (norm.mean(at::IntArrayRef{0, 2}) / rotary.attention_factor).to(torch::kCPU);
}

FrequencyUsageSink::FrequencyUsageSink(int64_t n_layers, int64_t n_heads, int64_t n_kv_heads,
                                       RotaryInfo rotary, std::vector<std::optional<RotaryInfo>> layer_rotary)
    : layer_rotary_(std::move(layer_rotary)) {
  const int64_t C = rotary.rotary_dim / 2;
  usage_.q_norm = torch::full({n_layers, n_heads, C}, std::numeric_limits<double>::quiet_NaN(), torch::kDouble);
  usage_.k_norm = torch::full({n_layers, n_kv_heads, C}, std::numeric_limits<double>::quiet_NaN(), torch::kDouble);
  usage_.rotary = std::move(rotary);
}

void FrequencyUsageSink::attention_inputs(const LayerAttentionInputs& in) {
  if (in.layer < 0 || in.layer >= usage_.q_norm.size(0)) return;
  torch::NoGradGuard no_grad;
  const auto layer = static_cast<size_t>(in.layer);
  if (!layer_rotary_.empty() && (layer >= layer_rotary_.size() || !layer_rotary_[layer])) return;  // NoPE: NaN
  const auto& rotary = layer_rotary_.empty() ? usage_.rotary : *layer_rotary_[layer];
  // A layer with fewer components (or kv heads) than the widest leaves the rest NaN (Gemma 4).
  const auto q = chunk_norms(in.q, rotary), k = chunk_norms(in.k, rotary);
  usage_.q_norm[in.layer].narrow(1, 0, q.size(1)).copy_(q);
  usage_.k_norm[in.layer].narrow(0, 0, k.size(0)).narrow(1, 0, k.size(1)).copy_(k);
}

FrequencyUsage compute_frequency_usage(const LoadedModel& loaded, const std::vector<int64_t>& ids,
                                       const Progress& progress) {
  require_one_stack(loaded, "Frequency usage");
  if (ids.empty()) throw Error("no tokens to measure (the input is empty)");
  const auto& cfg = loaded.model->config();
  const int64_t T = static_cast<int64_t>(ids.size());
  const auto rotary = loaded.model->position_encoding().rotary_info(T);
  if (!rotary)
    throw Error("frequency usage needs rotary components (RoPE, HoPE); this model's position encoding is " +
                loaded.model->position_encoding().describe());
  std::vector<std::optional<RotaryInfo>> layer_rotary;
  auto axis = *rotary;  // the θ axis: the model's, or the widest layer's (Gemma 4's global heads)
  if (cfg.per_layer_schemes())
    for (int l = 0; l < cfg.n_layers; ++l) {
      layer_rotary.push_back(loaded.model->position_encoding(l).rotary_info(T));
      if (layer_rotary.back() && layer_rotary.back()->rotary_dim > axis.rotary_dim) axis = *layer_rotary.back();
    }
  FrequencyUsageSink sink(cfg.n_layers, cfg.n_heads, cfg.most_kv_heads(), axis, std::move(layer_rotary));
  c10::InferenceMode inference;
  ForwardOptions options;
  options.logits = LogitsReturned::None;
  loaded.model->forward(torch::tensor(ids, torch::kLong).unsqueeze(0), sink, progress.layers(), options);
  auto usage = sink.result();
  usage.L = training_length(cfg);
  return usage;
}

}  // namespace poslens
