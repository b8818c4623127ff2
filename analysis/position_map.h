#pragma once
// Position-only attention (SPEC.md §3; seed 001 Fig. 4): the attention each head would pay
// from position alone, beside its real pattern on the same input, both row-max normalised. The
// method depends on how the model encodes position (one per layer, named in `methods`):
//   additive (ALiBi, T5, KERPLE, FIRE, Shaw, Transformer-XL) and CoPE — softmax over allowed
//     keys of hook_pos_scores, the position term as it enters the logits (CoPE: z_i[p_ij] given
//     this input's contextual positions, on the score scale);
//   absolute (learned, sinusoidal) — the layer fed the position embeddings alone through its
//     attention norm and q/k projections with biases: softmax(scale·q(P_i)·k(P_j));
//   rotary (RoPE, scaled RoPE, HoPE) — softmax_j f(i − j), f the head's mean logit against
//     distance from the U-shape probe (rope_probe.h) at T = the input length;
//   CoPE + rotary — the CoPE term plus the probe's rotary part (components and remainder);
//   NoPE (and Heinsen, whose state depends on the tokens) — uniform over allowed keys.
// Also what CoPE counts (mean gate per key token, seed 001 Figs. 4, 6) and, for absolute
// models, layer 0's logit decomposition (absolute_terms.h).
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "analysis/absolute_terms.h"
#include "analysis/head_metrics.h"
#include "core/runtime/checkpoint.h"

namespace poslens {

struct PositionMapOptions {
  int64_t probe_samples = 64;  ///< tokens of the rotary probe (0: every non-special token)
  uint64_t seed = 0;
};

struct CopeCounting {
  /// Mean gate g_ij over the queries that see key j, float32 [layer, head, k_pos].
  at::Tensor mean_gate_per_key;
  /// The same averaged over the keys of each token type, float32 [layer, head, token_type].
  at::Tensor mean_gate_per_token;
  std::vector<int64_t> token_ids;     ///< [token_type], in order of first appearance
  std::vector<int64_t> token_counts;  ///< [token_type], occurrences in the input
};

struct PositionMapResult {
  std::vector<int64_t> ids;
  std::vector<std::string> labels;
  /// float32 [layer, head, q_pos, k_pos]: each query row scaled to max 1, 0 where masked.
  at::Tensor position_map;
  at::Tensor pattern;  ///< hook_pattern, normalised the same way
  std::vector<std::string> methods;  ///< per layer: "additive", "cope", "cope+rotary",
                                     ///< "rotary", "absolute", "uniform"
  std::string explanation;           ///< one line for the view: what the map is for this model
  std::optional<CopeCounting> cope;
  std::optional<AbsoluteTerms> absolute;  ///< layer 0, absolute models
};

/// Runs `model` on `ids` (a batch of one) and builds the maps. Memory: the pattern and the map,
/// 2 × 4·L·H·T² bytes, plus one hook's captures while they are consumed layer by layer (CoPE:
/// the gates too). `progress(done, total)` counts
/// layers of the forward and samples of the probe; false cancels (poslens::Cancelled).
/// Throws poslens::Error for bad ids.
PositionMapResult position_map(const LoadedModel& model, const std::vector<int64_t>& ids,
                               const PositionMapOptions& options = {},
                               const std::function<bool(int64_t, int64_t)>& progress = {});

/// The method position_map() uses for each layer of `model` on a `T`-token input (see above).
std::vector<std::string> position_methods(const LoadedModel& model, int64_t T);

/// softmax over allowed keys of `logits` [..., q, k], each row scaled to max 1, 0 where
/// `allowed` [q, k] is false (rows with no allowed key are 0).
at::Tensor row_normalised_softmax(const at::Tensor& logits, const at::Tensor& allowed);

/// Each row of `pattern` [..., q, k] scaled to max 1 (0 rows stay 0).
at::Tensor row_max_normalised(const at::Tensor& pattern);

/// CoPE counting from gates [layer, head, q, k] (0 where masked), `allowed` [q, k] and the ids.
CopeCounting cope_counting(const at::Tensor& gates, const at::Tensor& allowed,
                           const std::vector<int64_t>& ids);

}  // namespace poslens
