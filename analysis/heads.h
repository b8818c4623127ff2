#pragma once
// Head overview metrics (docs/analyses.md, docs/formulas.md §3): one number per
// (layer, head) from a run's attention, so heads that attend by position stand out.
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "analysis/heads_csv.h"
#include "analysis/progress.h"
#include "core/runtime/checkpoint.h"
#include "core/runtime/hook_sink.h"

namespace poslens {

struct HeadMetrics {
  /// float64 [layer, head, metric], metrics as head_metric_names():
  ///   entropy            mean over queries of −Σ_j p_ij·ln p_ij (nats; 0 = one key)
  ///   mean_distance      mean over queries of Σ_j p_ij·(i − j) (positions)
  ///   sink               mean over queries of p_i0 (attention to the first token)
  ///   sink_2 … sink_4    mean over queries of Σ_{j<k} p_ij, k = 2, 3, 4: the attention mass on
  ///                      the first k tokens (StreamingLLM's attention sinks, Xiao et al. 2023,
  ///                      arXiv 2309.17453 §3.1; a query that sees fewer keys puts all there)
  ///   previous_token     Σ(A ⊙ D)/Σ A with D_ij = [j = i − 1]
  ///   duplicate_token    Σ(A ⊙ D)/Σ A with D_ij = [t_j = t_i, j < i] on the input's tokens t
  ///   induction          Σ(A ⊙ D)/Σ A with D_ij = [t_{j−1} = t_i, 1 ≤ j ≤ i], measured on a
  ///                      repeated random sequence (induction_tokens()); NaN when not measured
  ///                      — the three detectors are TransformerLens's head_detector
  ///                      (error_measure "mul", no BOS or current-token exclusion; tests check
  ///                      them against TL's own code, tests/data/analysis)
  ///   position_share     Var(position term) / Var(logits) over allowed entries — how much of
  ///                      the logits' spread the position term makes (additive methods and
  ///                      CoPE: hook_pos_scores; NaN for models without one)
  ///   learned_sink       mean over queries of 1 − Σ_j p_ij: the share a learned sink logit
  ///                      takes from the keys (gpt-oss, ModelConfig::attention_sinks; NaN for
  ///                      models without one)
  at::Tensor values;
  /// The repeated sequence the induction scores were measured on (empty: not measured).
  std::vector<int64_t> induction_ids;
};

/// What compute_head_metrics() measures besides the input.
struct HeadMetricsOptions {
  /// Length n of the random half of the induction sequence (0: no induction scores); shortened
  /// to (n_ctx − 1)/2 for models whose context is shorter.
  int64_t induction_length = 64;
  uint64_t seed = 0;  ///< seeds the induction sequence
};

/// The induction sequence for `config`: [BOS (where the model has one), r_1 … r_n, r_1 … r_n]
/// with r drawn uniformly (std::mt19937_64 seeded with `seed`) from the vocabulary without
/// the BOS id — TransformerLens's induction test input. Throws poslens::Error when n < 1 or the
/// sequence would exceed the model's n_ctx.
std::vector<int64_t> induction_tokens(const ModelConfig& config, int64_t n, uint64_t seed);

/// The metrics of `model` on `ids` (a batch of one) in one forward pass, streamed
/// (HeadMetricsSink): memory O(layer · head), whatever T; the induction column from a second
/// pass over induction_tokens() (2n + 1 positions) unless options.induction_length is 0.
/// `progress` counts layers. Throws poslens::Error for bad ids, poslens::Cancelled.
HeadMetrics compute_head_metrics(const LoadedModel& model, const std::vector<int64_t>& ids,
                                 const Progress& progress = {},
                                 const HeadMetricsOptions& options = {});

/// The metrics from a forward pass's blocks (hook_pattern; hook_attn_scores and
/// hook_pos_scores where the encoding has a position term) in one pass: float64 sums per
/// (layer, head) — −Σ p·ln p, Σ p·(i − j), p_i0, p_i,i−1 per row; count, Σx and Σx² of the
/// position term and the logits over visible entries — divided at the end. The same numbers
/// as head_metrics() of the whole maps, nothing of size T² kept. Batches average over every
/// sequence's queries. The token detectors need `ids` (int64 [batch, pos], any device); without
/// them duplicate_token and induction are NaN.
class HeadMetricsSink : public HookSink {
 public:
  /// `learned_sinks`: the model has learned sink logits (the learned_sink column; else NaN).
  HeadMetricsSink(int64_t n_layers, int64_t n_heads, bool position_share, at::Tensor ids = {},
                  bool learned_sinks = false);
  bool wants(const HookPoint& point) const override;
  void begin(int64_t batch, int64_t length) override;
  void block(const HookPoint& point, const MapBlock& block) override;
  /// The metrics of the pass so far (after the forward: of the whole input).
  HeadMetrics result() const;

 private:
  int64_t n_layers_, n_heads_;
  bool position_share_;
  bool learned_sinks_;
  at::Tensor ids_;
  int64_t batch_ = 0, length_ = 0;
  /// float64 [layer, head, sums] (the Sum enum in heads.cpp).
  at::Tensor sums_;
};

/// The whole-map form (a reference for the sink): `pattern` float [layer, head, q_pos, k_pos]
/// (hook_pattern of one input; learned_sink NaN: see HeadMetricsSink), `allowed` bool [q_pos, k_pos]; `logits` and `position`
/// (hook_attn_scores, hook_pos_scores, same shape) may be undefined (then position_share is
/// NaN); `ids` int64 [q_pos] the input's tokens (undefined: duplicate_token and induction NaN;
/// here induction is scored on these same tokens). Throws poslens::Error for mismatched shapes.
HeadMetrics head_metrics(const at::Tensor& pattern, const at::Tensor& allowed,
                         const at::Tensor& logits = {}, const at::Tensor& position = {},
                         const at::Tensor& ids = {});

/// TransformerLens's detection patterns (head_detector.py), float64 [T, T] for tokens `ids`
/// (int64 [T]): "previous_token", "duplicate_token" or "induction" (formulas at HeadMetrics).
/// Throws poslens::Error for another name.
at::Tensor detection_pattern(const std::string& name, const at::Tensor& ids);

}  // namespace poslens
