#pragma once
// Head overview metrics (issue "position-only attention", item 3; SPEC.md §3): one number per
// (layer, head) from a run's attention, so heads that attend by position stand out.
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "analysis/head_metrics_csv.h"
#include "analysis/progress.h"
#include "core/runtime/checkpoint.h"
#include "core/runtime/hook_sink.h"

namespace poslens {

struct HeadMetrics {
  /// float64 [layer, head, metric], metrics as head_metric_names():
  ///   entropy            mean over queries of −Σ_j p_ij·ln p_ij (nats; 0 = one key)
  ///   mean_distance      mean over queries of Σ_j p_ij·(i − j) (positions)
  ///   sink               mean over queries of p_i0 (attention to the first token)
  ///   previous_token     mean over queries i ≥ 1 of p_i,i−1
  ///   position_share     Var(position term) / Var(logits) over allowed entries — how much of
  ///                      the logits' spread the position term makes (additive methods and
  ///                      CoPE: hook_pos_scores; NaN for models without one)
  at::Tensor values;
};

/// The metrics of `model` on `ids` (a batch of one) in one forward pass, streamed
/// (HeadMetricsSink): memory O(layer · head), whatever T. `progress` counts layers. Throws
/// poslens::Error for bad ids, poslens::Cancelled.
HeadMetrics compute_head_metrics(const LoadedModel& model, const std::vector<int64_t>& ids,
                                 const Progress& progress = {});

/// The metrics from a forward pass's blocks (hook_pattern; hook_attn_scores and
/// hook_pos_scores where the encoding has a position term) in one pass: float64 sums per
/// (layer, head) — −Σ p·ln p, Σ p·(i − j), p_i0, p_i,i−1 per row; count, Σx and Σx² of the
/// position term and the logits over visible entries — divided at the end. The same numbers
/// as head_metrics() of the whole maps, nothing of size T² kept. Batches average over every
/// sequence's queries.
class HeadMetricsSink : public HookSink {
 public:
  HeadMetricsSink(int64_t n_layers, int64_t n_heads, bool position_share);
  bool wants(const HookPoint& point) const override;
  void begin(int64_t batch, int64_t length) override;
  void block(const HookPoint& point, const MapBlock& block) override;
  /// The metrics of the pass so far (after the forward: of the whole input).
  HeadMetrics result() const;

 private:
  int64_t n_layers_, n_heads_;
  bool position_share_;
  int64_t batch_ = 0, length_ = 0;
  /// float64 [layer, head, 9]: entropy, distance, sink, previous, n, Σpos, Σpos², Σlogit, Σlogit².
  at::Tensor sums_;
};

/// The whole-map form (a reference for the sink): `pattern` float [layer, head, q_pos, k_pos]
/// (hook_pattern of one input), `allowed` bool [q_pos, k_pos]; `logits` and `position`
/// (hook_attn_scores, hook_pos_scores, same shape) may be undefined (then position_share is
/// NaN). Throws poslens::Error for mismatched shapes.
HeadMetrics head_metrics(const at::Tensor& pattern, const at::Tensor& allowed,
                         const at::Tensor& logits = {}, const at::Tensor& position = {});

}  // namespace poslens
