#pragma once
// The position-only logits of docs/formulas.md §3 for any block of any head, from what the model's
// method needs — so a map is made where it is looked at (a block streamed from a forward pass,
// or one head recomputed in the GUI), never for every head at once:
//   additive (ALiBi, T5, KERPLE, FIRE, Shaw, Transformer-XL) and CoPE — the block's position
//     term as it enters the logits (hook_pos_scores; CoPE: z_i[p_ij] given this input's
//     contextual positions, on the score scale);
//   absolute (learned, sinusoidal) — the layer fed the position embeddings alone through its
//     attention norm and q/k projections with biases: scale·q(P_i)·k(P_j);
//   rotary (RoPE, scaled RoPE, HoPE) — f(i − j), f the head's mean logit against distance from
//     the U-shape probe (probe.h) at T = the input length: N forward passes of T tokens
//     (N = probe_samples, 64 by default), once per input length;
//   CoPE + rotary — the CoPE term plus the probe's rotary part (components and remainder);
//   NoPE (and Heinsen, whose state depends on the tokens) — 0 (a uniform map).
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "analysis/progress.h"
#include "core/runtime/checkpoint.h"

namespace poslens {

struct PositionMapOptions {
  int64_t probe_samples = 64;  ///< tokens of the rotary probe (0: every non-special token)
  uint64_t seed = 0;
};

/// The method for `model` on a `T`-token input (see the file comment), without running the probe:
/// "additive", "cope", "additive+rotary", "cope+rotary", "rotary", "absolute" or "uniform".
std::string position_only_method(const LoadedModel& model, int64_t T);

/// One line for a view: what the map is for `model` at T tokens.
std::string position_only_explanation(const LoadedModel& model, int64_t T);

class PositionOnlyLogits {
 public:
  /// For `model` on a `T`-token input. Rotary models run the probe here (`progress` counts its
  /// samples). Throws poslens::Error (the probe's errors), poslens::Cancelled.
  PositionOnlyLogits(const LoadedModel& model, int64_t T, const PositionMapOptions& options = {},
                     const Progress& progress = {});

  /// position_only_method() of the model and T.
  const std::string& method() const { return method_; }
  /// position_only_explanation() of the model and T.
  std::string explanation() const { return position_only_explanation(model_, T_); }
  /// True when logits() needs the block's position term (hook_pos_scores of that head).
  bool needs_position_term() const { return additive_; }

  /// float32 [q1 − q0, k1 − k0] on the model's device: the position-only logits of head
  /// (`layer`, `head`) for query rows [q0, q1) and keys [k0, k1); hidden entries are whatever
  /// the formula gives (the caller masks). `position_term` [rows, keys] is the block's
  /// hook_pos_scores of that head when needs_position_term(). Throws poslens::Error for a head
  /// out of range or a missing position term.
  at::Tensor logits(int layer, int head, int64_t q0, int64_t q1, int64_t k0, int64_t k1,
                    const at::Tensor& position_term = {}) const;

 private:
  const LoadedModel& model_;
  int64_t T_;
  std::string method_;
  bool additive_ = false, rotary_ = false, absolute_ = false;
  at::Tensor rotary_by_distance_;  ///< [layer, head, T] float32: f(d) at index d = i − j
  at::Tensor position_table_;      ///< absolute: P [1, T, d_model]
  mutable std::map<int, std::pair<at::Tensor, at::Tensor>> position_qk_;  ///< layer -> q(P), k(P)
};

/// Each row of `logits` [..., q, k] softmaxed over `allowed` [q, k] and scaled to max 1, 0
/// where hidden (rows with no visible key are 0): the maps' normalisation (Golovneva et al. 2024 Fig. 4).
at::Tensor row_normalised_softmax(const at::Tensor& logits, const at::Tensor& allowed);

/// Each row of `pattern` [..., q, k] scaled to max 1 (0 rows stay 0).
at::Tensor row_max_normalised(const at::Tensor& pattern);

}  // namespace poslens
