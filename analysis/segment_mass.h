#pragma once
// The attention mass some query rows put on spans of keys ("segments"), per layer and head,
// recomputed during one forward pass from each layer's inputs and the rows' log-sum-exp
// (LayerAttention::row_lse and ::region, attention.h): O(rows · T) per layer, never a map of
// T × T, and the forward itself keeps its fused path. The measure of the segment analysis of
// Cohere 2025 ("Rope to Nope and Back Again: A New Hybrid Attention Strategy", arXiv
// 2501.18795, §4) and of the needle sweep (needle_sweep.h).
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "core/runtime/hook_sink.h"
#include "core/runtime/transformer.h"

namespace poslens {

/// A span of key positions [begin, end) with its name ("begin", "needle", …).
struct KeySegment {
  std::string name;
  int64_t begin = 0, end = 0;
};

/// Collects, for query rows [q_begin, q_end) of every decoder (or encoder-only) layer, the
/// mass mean_i Σ_{j ∈ segment} p_ij each head puts on each segment — p the attention pattern
/// (hook_pattern), so a head's masses over segments that tile [0, T) sum to 1 (1 − the learned
/// sink's share for gpt-oss). Keys a row cannot see (causal mask, sliding window) count 0.
class SegmentMassSink : public HookSink {
 public:
  /// `model` must outlive the sink. Throws poslens::Error for an empty or out-of-order row
  /// range or a segment with end < begin.
  SegmentMassSink(const Transformer& model, std::vector<KeySegment> segments, int64_t q_begin, int64_t q_end);
  bool wants(const HookPoint&) const override { return false; }
  bool wants_attention_inputs(int) const override { return true; }
  void attention_inputs(const LayerAttentionInputs& inputs) override;
  /// float32 CPU [layer, head, segment]; NaN for a layer not seen.
  const at::Tensor& mass() const { return mass_; }

 private:
  const Transformer& model_;
  std::vector<KeySegment> segments_;
  int64_t q_begin_, q_end_;
  at::Tensor mass_;
};

}  // namespace poslens
