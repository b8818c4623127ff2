#include "analysis/massive_activations.h"

#include <torch/torch.h>

#include "core/base/error.h"
#include "core/base/shape_text.h"
#include "core/runtime/model_input.h"

namespace poslens {

LayerExtremes layer_extremes(const at::Tensor& h, int64_t k) {
  if (h.dim() != 2 || h.numel() == 0)
    throw Error("massive activations: a layer's residual must be a non-empty [pos, d_model], got " +
                shape_str(h));
  if (k < 1) throw Error("massive activations: the number of top entries must be at least 1");
  const auto x = h.detach().to(torch::kCPU, torch::kFloat32).contiguous();
  const auto magnitude = x.abs().flatten();
  const auto [top, index] = magnitude.topk(std::min(k, magnitude.numel()));
  const int64_t d = x.size(1);
  LayerExtremes e;
  e.values = x.flatten().index_select(0, index).to(torch::kDouble);
  e.positions = torch::div(index, d, "floor");
  e.dims = torch::remainder(index, d);
  e.median = magnitude.median().item<double>();
  return e;
}

MassiveActivationSink::MassiveActivationSink(int64_t n_layers, int64_t top_k)
    : n_layers_(n_layers), top_k_(top_k) {
  if (top_k < 1) throw Error("massive activations: --top must be at least 1");
  values_ = torch::full({n_layers, top_k}, std::numeric_limits<double>::quiet_NaN(), torch::kDouble);
  positions_ = torch::full({n_layers, top_k}, -1, torch::kLong);
  dims_ = torch::full({n_layers, top_k}, -1, torch::kLong);
  median_ = torch::full({n_layers}, std::numeric_limits<double>::quiet_NaN(), torch::kDouble);
}

bool MassiveActivationSink::wants(const HookPoint& point) const {
  return point.kind == HookKind::ResidPost && point.stack == HookStack::Blocks;
}

void MassiveActivationSink::tensor(const HookPoint& point, const at::Tensor& value, int64_t) {
  if (point.layer < 0 || point.layer >= n_layers_) return;
  if (value.size(0) != 1)
    throw Error("massive activations: measured on one sequence, got a batch of " + std::to_string(value.size(0)));
  const auto e = layer_extremes(value[0], top_k_);
  const int64_t n = e.values.size(0);
  values_[point.layer].narrow(0, 0, n).copy_(e.values);
  positions_[point.layer].narrow(0, 0, n).copy_(e.positions);
  dims_[point.layer].narrow(0, 0, n).copy_(e.dims);
  median_[point.layer] = e.median;
  if (means_layer_ < 0) {  // the first layer the forward's "massive=…" ablation would act on
    const auto massive = massive_entries(value);
    if (massive.any().item<bool>()) {
      const auto m = massive[0].to(torch::kCPU, torch::kDouble);
      const auto x = value[0].detach().to(torch::kCPU, torch::kDouble);
      means_ = (x * m).sum(0) / m.sum(0);  // 0 / 0 = NaN where a dimension has none
      means_layer_ = point.layer;
    }
  }
}

MassiveActivations MassiveActivationSink::result() const {
  const auto magnitude = values_.abs();
  const auto massive =
      (magnitude > kMassiveAbsolute) & (magnitude > kMassiveRatio * median_.unsqueeze(1));
  return {values_.clone(), positions_.clone(), dims_.clone(), median_.clone(), massive,
          means_.defined() ? means_.clone() : at::Tensor(), means_layer_};
}

MassiveActivations compute_massive_activations(const LoadedModel& loaded, const std::vector<int64_t>& ids,
                                               int64_t top_k, const Progress& progress) {
  require_one_stack(loaded, "Massive activations");
  if (ids.empty()) throw Error("no tokens to measure (the input is empty)");
  const auto& cfg = loaded.model->config();
  MassiveActivationSink sink(cfg.n_layers, top_k);
  c10::InferenceMode inference;
  ForwardOptions options;
  options.logits = LogitsReturned::None;
  loaded.model->forward(torch::tensor(ids, torch::kLong).unsqueeze(0), sink, progress.layers(), options);
  return sink.result();
}

}  // namespace poslens
