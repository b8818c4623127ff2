#pragma once
// Two models on one input: the row-wise Jensen–Shannon divergence between their attention
// patterns, per head (Kazemnejad et al. 2023, "The Impact of Positional Encoding on Length
// Generalization in Transformers", arXiv 2305.19466, §5.3 / Fig. 5 compare NoPE's heads with
// other encodings' this way). For query i, JS(P_i ‖ Q_i) = ½ KL(P_i ‖ M_i) + ½ KL(Q_i ‖ M_i),
// M = (P + Q)/2, in nats (0 … ln 2). Two checkpoints of one run show which heads moved.
//
// Nothing of size T² is kept: the first model's pass keeps each layer's attention inputs
// (AttentionInputsSink, O(layer · T · d)); the second's pattern blocks arrive as it makes them, and the first model's
// same rows are recomputed from its inputs (LayerAttention, the forward's own code).
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "analysis/progress.h"
#include "core/runtime/checkpoint.h"
#include "core/runtime/hook_sink.h"

namespace poslens {

struct PatternDivergence {
  at::Tensor per_head;   ///< float64 [layer, head]: mean over queries of JS(P_i ‖ Q_i), nats
  at::Tensor per_query;  ///< float64 [layer, q_pos]: JS at each query, mean over heads
};

/// JS(P_i ‖ Q_i) of each row: `p`, `q` float [..., keys] (rows of probabilities, 0 where hidden)
/// → float64 [...], with 0·ln 0 = 0. Throws poslens::Error for different shapes.
at::Tensor js_divergence_rows(const at::Tensor& p, const at::Tensor& q);

/// The divergence of `a`'s and `b`'s patterns on `ids` (a batch of one; both models must take
/// them: their vocabularies must hold every id). The two models must have the same n_layers
/// and n_heads and be decoder- or encoder-only; their configs may differ otherwise (position
/// encodings, windows, sizes). `progress`: a's pass, then b's. Throws poslens::Error otherwise,
/// for empty ids; poslens::Cancelled.
PatternDivergence compute_pattern_divergence(const LoadedModel& a, const LoadedModel& b,
                                             const std::vector<int64_t>& ids,
                                             const Progress& progress = {});

/// What else the two passes of a divergence run: `b_offset` is the second pass's position
/// offset (ForwardOptions::position_offset; the position-offset intervention compares a model
/// with itself shifted), `a_extra`/`b_extra` further sinks each pass feeds (may be null).
struct DivergencePasses {
  int64_t b_offset = 0;
  HookSink* a_extra = nullptr;
  HookSink* b_extra = nullptr;
};
PatternDivergence compute_pattern_divergence(const LoadedModel& a, const LoadedModel& b,
                                             const std::vector<int64_t>& ids, const Progress& progress,
                                             const DivergencePasses& passes);

}  // namespace poslens
