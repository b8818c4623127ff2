#pragma once
// Head overview metrics (issue "position-only attention", item 3; SPEC.md §3): one number per
// (layer, head) from a run's attention, so heads that attend by position stand out.
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace poslens {

/// Metric names, in the order of HeadMetrics::values' last axis.
const std::vector<std::string>& head_metric_names();

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

/// `pattern` float [layer, head, q_pos, k_pos] (hook_pattern of one input), `allowed` bool
/// [q_pos, k_pos]; `logits` and `position` (hook_attn_scores, hook_pos_scores, same shape) may
/// be undefined (then position_share is NaN). Throws poslens::Error for mismatched shapes.
HeadMetrics head_metrics(const at::Tensor& pattern, const at::Tensor& allowed,
                         const at::Tensor& logits = {}, const at::Tensor& position = {});

}  // namespace poslens
