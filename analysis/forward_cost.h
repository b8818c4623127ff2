#pragma once
// The unit an analysis states its cost in: one plain forward pass of the same input, timed in
// the same run (docs/analyses.md "Cost against one forward pass").
#include <ATen/core/Tensor.h>

#include "core/runtime/hook_sink.h"
#include "core/runtime/transformer.h"

namespace poslens {

/// A sink that wants no hook: the forward alone.
class NoHooks : public HookSink {
 public:
  bool wants(const HookPoint&) const override { return false; }
};

/// Wall-clock seconds of one forward of `tokens` (int64 [batch, pos], any device) with no hook
/// and no logits, under c10::InferenceMode. Throws as Transformer::forward.
double plain_forward_seconds(const Transformer& model, const at::Tensor& tokens);

}  // namespace poslens
