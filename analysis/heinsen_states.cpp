#include "analysis/heinsen_states.h"

#include <torch/torch.h>

#include "core/base/error.h"
#include "core/position/heinsen.h"
#include "core/runtime/capture_sink.h"
#include "core/runtime/model_input.h"

namespace poslens {
namespace {

/// The Heinsen component of `pe` (itself, or a part of a composed encoding), or null.
const HeinsenEncoding* heinsen_of(const PositionEncoding& pe) {
  if (const auto* h = dynamic_cast<const HeinsenEncoding*>(&pe)) return h;
  if (const auto* composed = dynamic_cast<const ComposedEncoding*>(&pe))
    for (const auto& part : composed->parts())
      if (const auto* h = dynamic_cast<const HeinsenEncoding*>(part.get())) return h;
  return nullptr;
}

}  // namespace

HeinsenStates compute_heinsen_states(const LoadedModel& loaded, const std::vector<int64_t>& ids) {
  require_one_stack(loaded, "Heinsen states");
  const auto* heinsen = heinsen_of(loaded.model->position_encoding());
  if (!heinsen)
    throw Error("Heinsen states need a Heinsen position component; this model's position encoding is " +
                loaded.model->position_encoding().describe());
  if (ids.empty()) throw Error("no tokens to measure (the input is empty)");
  Captures captures;
  CaptureSink sink(CaptureSpec({"hook_embed", "hook_pe_state"}), captures);
  c10::InferenceMode inference;
  ForwardOptions options;
  options.logits = LogitsReturned::None;
  loaded.model->forward(torch::tensor(ids, torch::kLong).unsqueeze(0), sink, {}, options);
  const auto x = captures.find({HookKind::Embed, -1})[0].to(torch::kDouble);  // [pos, d_model]
  const auto& w = heinsen->weights();
  const auto linear = [&](const at::Tensor& weight, const at::Tensor& bias) {
    return at::linear(x, weight.to(x.device(), torch::kDouble), bias.defined() ? bias.to(x.device(), torch::kDouble) : at::Tensor());
  };
  HeinsenStates out;
  out.state = captures.find({HookKind::PeState, -1})[0].to(torch::kCPU, torch::kDouble);
  out.decay = torch::sigmoid(linear(w.w_p, w.b_p)).to(torch::kCPU);
  out.logits = linear(w.w_h, w.b_h).to(torch::kCPU);
  return out;
}

}  // namespace poslens
