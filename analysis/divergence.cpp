#include "analysis/divergence.h"

#include <torch/torch.h>

#include <memory>

#include "core/base/error.h"
#include "core/base/shape_text.h"
#include "core/runtime/attention.h"
#include "core/runtime/hook_sink.h"
#include "core/runtime/model_input.h"
#include "core/runtime/sinks.h"

namespace poslens {
namespace {

/// Receives the second model's pattern blocks and compares each with the first model's same
/// rows, recomputed from its kept inputs.
class DivergenceSink : public HookSink {
 public:
  DivergenceSink(const LoadedModel& first, std::vector<LayerAttentionInputs> inputs, int64_t n_heads, int64_t T)
      : first_(first), inputs_(std::move(inputs)) {
    const auto L = static_cast<int64_t>(inputs_.size());
    result_.per_head = torch::zeros({L, n_heads}, torch::kDouble);
    result_.per_query = torch::zeros({L, T}, torch::kDouble);
  }
  bool wants(const HookPoint& point) const override {
    return point.kind == HookKind::Pattern && point.stack == HookStack::Blocks;
  }
  void block(const HookPoint& point, const MapBlock& b) override {
    const int l = point.layer;
    if (!attention_ || layer_ != l) {
      attention_ = std::make_unique<LayerAttention>(first_.model->layer_config(l), first_.model->position_encoding(l),
                                                    inputs_.at(static_cast<size_t>(l)));
      layer_ = l;
    }
    BlockRequest pattern;
    pattern.pattern = true;
    const auto a = attention_->rows(b.q_begin, b.q_begin + b.rows(), pattern);
    // Both blocks onto the keys either may see (windows and sizes may differ between models);
    // the usual case, the same keys, needs no copy.
    const int64_t k0 = std::min(a.k_begin, b.k_begin);
    const int64_t k1 = std::max(a.k_end, b.k_begin + b.keys());
    const auto widen = [&](const at::Tensor& x, int64_t begin) {
      if (begin == k0 && x.size(3) == k1 - k0) return x.to(b.values.device());
      auto wide = torch::zeros({x.size(0), x.size(1), x.size(2), k1 - k0}, x.options().device(b.values.device()));
      wide.narrow(3, begin - k0, x.size(3)).copy_(x);
      return wide;
    };
    const auto js = js_divergence_rows(widen(a.pattern, a.k_begin), widen(b.values, b.k_begin))[0];  // [H, rows]
    result_.per_head[l] += js.sum(1).to(torch::kCPU);
    result_.per_query[l].narrow(0, b.q_begin, b.rows()).copy_(js.mean(0).to(torch::kCPU));
  }
  void layer_done(int layer) override {
    if (layer >= 0 && layer == layer_) {
      attention_.reset();
      inputs_.at(static_cast<size_t>(layer)) = {};  // this layer's inputs are no longer needed
    }
  }
  PatternDivergence result(int64_t T) const {
    return {result_.per_head / static_cast<double>(T), result_.per_query.clone()};
  }

 private:
  const LoadedModel& first_;
  std::vector<LayerAttentionInputs> inputs_;
  std::unique_ptr<LayerAttention> attention_;
  int layer_ = -1;
  PatternDivergence result_;
};

}  // namespace

at::Tensor js_divergence_rows(const at::Tensor& p, const at::Tensor& q) {
  if (p.sizes() != q.sizes() || p.dim() < 1)
    throw Error("js_divergence_rows: the two patterns must have one shape, got " + shape_str(p) + " and " +
                shape_str(q));
  // Per entry in the inputs' precision (float32 patterns: what a block holds), rows summed in
  // float64. x·ln(x/m) = xlogy(x, x) − xlogy(x, m), 0 where x = 0; where x > 0, m ≥ x/2 > 0.
  const auto x = p.is_floating_point() ? p : p.to(torch::kFloat32);
  const auto y = q.to(x.scalar_type());
  const auto m = (x + y) * 0.5;
  const auto terms = torch::xlogy(x, x) - torch::xlogy(x, m) + torch::xlogy(y, y) - torch::xlogy(y, m);
  return terms.sum(-1, /*keepdim=*/false, torch::kDouble) / 2;
}

PatternDivergence compute_pattern_divergence(const LoadedModel& a, const LoadedModel& b,
                                             const std::vector<int64_t>& ids, const Progress& progress) {
  return compute_pattern_divergence(a, b, ids, progress, DivergencePasses{});
}

PatternDivergence compute_pattern_divergence(const LoadedModel& a, const LoadedModel& b,
                                             const std::vector<int64_t>& ids, const Progress& progress,
                                             const DivergencePasses& passes) {
  require_one_stack(a, "Pattern divergence");
  require_one_stack(b, "Pattern divergence");
  const auto &ca = a.model->config(), &cb = b.model->config();
  if (ca.n_layers != cb.n_layers || ca.n_heads != cb.n_heads)
    throw Error("pattern divergence compares head by head: the models have " + std::to_string(ca.n_layers) +
                " × " + std::to_string(ca.n_heads) + " and " + std::to_string(cb.n_layers) + " × " +
                std::to_string(cb.n_heads) + " layers × heads");
  if (ids.empty()) throw Error("no tokens to compare on (the input is empty)");
  const int64_t T = static_cast<int64_t>(ids.size());
  const auto tokens = torch::tensor(ids, torch::kLong).unsqueeze(0);
  c10::InferenceMode inference;
  ForwardOptions options;
  options.logits = LogitsReturned::None;
  std::vector<LayerAttentionInputs> inputs;
  AttentionInputsSink kept(inputs, ca.n_layers, a.model->position_encoding().scores_read_values());
  const auto with = [](HookSink& main, HookSink* extra) {
    return extra ? SinkFanout({&main, extra}) : SinkFanout({&main});
  };
  auto first = with(kept, passes.a_extra);
  a.model->forward(tokens, first, progress.part(0.0, 0.4, "first model").layers(), options);
  DivergenceSink sink(a, std::move(inputs), ca.n_heads, T);
  auto second = with(sink, passes.b_extra);
  ForwardOptions shifted = options;
  shifted.position_offset = passes.b_offset;
  b.model->forward(tokens, second, progress.part(0.4, 0.6, "second model").layers(), shifted);
  return sink.result(T);
}

}  // namespace poslens
