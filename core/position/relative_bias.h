#pragma once
// Additive relative biases as model components (SPEC.md §2): ALiBi, T5 buckets, KERPLE, FIRE.
// Each adds a [head, q_pos, k_pos] term to the logits as is (no 1/sqrt(d)); that term is also
// hook_pos_scores. Each method's file (alibi.h, t5.h, kerple.h, fire.h) derives from it.
#include <vector>

#include "core/position/position_encoding.h"

namespace poslens {

/// A causal bias b[h, i, j] (0 for j > i) made symmetric: b[h, i, j] for j <= i, b[h, j, i]
/// for j > i — the bias of |i - j| when b depends on the distance only (non-causal models).
at::Tensor symmetric_bias(const at::Tensor& causal_bias);
/// "shared across layers" or "per layer", for describe().
std::string describe_sharing(bool shared);

/// The shared part: add bias(layer, T) to ScoreTerms::position.
class RelativeBiasEncoding : public PositionEncoding {
 public:
  void add_score_terms(const AttentionInputs& in, ScoreTerms& out) const override;
  bool has_position_scores() const override { return true; }
  /// bias(layer, T): these methods' term does not depend on the input.
  at::Tensor static_position_scores(int layer, int64_t T) const override { return bias(layer, T); }

 protected:
  /// float32 [head, T, T] for query i and key j at positions i, j of a T-token sequence.
  virtual at::Tensor bias(int layer, int64_t T) const = 0;
};

}  // namespace poslens
