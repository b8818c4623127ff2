#pragma once
// Keep-whole captures: the sink behind Transformer::forward(tokens, spec, captures) and every
// small run, export and analysis that wants a hook's whole tensor. Map hooks are assembled
// from their blocks into [batch, head, T, T] — O(layer · head · T²) when asked for every layer,
// which is why long inputs use the other sinks (sinks.h) instead.
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "core/runtime/hook_sink.h"

namespace poslens {

/// Captured tensors of one forward pass, in forward order. Each is on the CPU, float32,
/// contiguous, with the shape docs/formulas.md §1 gives for its hook point (batch dimension kept).
struct Captures {
  std::vector<std::pair<HookPoint, at::Tensor>> tensors;
  /// The tensor of `point`, or an undefined tensor if it was not captured.
  at::Tensor find(const HookPoint& point) const;
};

/// (layer, head) pairs; a map hook of a layer keeps only its selected heads, in this order.
using HeadSelection = std::vector<std::pair<int, int>>;

/// Parses "5.3,0.1" into {(5, 3), (0, 1)}. Throws poslens::Error naming the entry for text
/// that is not LAYER.HEAD or a head outside [0, n_layers) × [0, n_heads).
HeadSelection parse_head_selection(const std::string& text, int64_t n_layers, int64_t n_heads);

/// The heads of `layer` in `selection`, in order.
std::vector<int64_t> heads_of_layer(const HeadSelection& selection, int layer);

/// Appends the hook points `spec` wants to `out`: CPU, float32, contiguous. With `heads`, map
/// hooks keep only the selected heads of each layer (layers with none are skipped).
class CaptureSink : public HookSink {
 public:
  CaptureSink(CaptureSpec spec, Captures& out, std::optional<HeadSelection> heads = {});
  bool wants(const HookPoint& point) const override;
  void begin(int64_t batch, int64_t length) override;
  void tensor(const HookPoint& point, const at::Tensor& value, int64_t pos_begin) override;
  void block(const HookPoint& point, const MapBlock& block) override;

 private:
  /// The newest capture of `point`.
  at::Tensor& newest(const HookPoint& point);
  CaptureSpec spec_;
  Captures& out_;
  std::optional<HeadSelection> heads_;
  int64_t length_ = 0;
};

}  // namespace poslens
