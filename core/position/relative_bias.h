#pragma once
// Additive relative biases as model components (docs/formulas.md §2): ALiBi, T5 buckets, KERPLE, FIRE.
// Each adds a [head, q_pos, k_pos] term to the logits as is (no 1/sqrt(d)); that term is also
// hook_pos_scores. Each method's file (alibi.h, t5.h, kerple.h, fire.h) derives from it.
//
// The bias is a function of absolute query and key positions (i, j), so attention computed in
// blocks of query rows and key chunks asks for exactly the block it computes.
#include <vector>

#include "core/position/position_encoding.h"

namespace poslens {

/// "shared across layers" or "per layer", for describe().
std::string describe_sharing(bool shared);

/// Absolute positions of the last `q_len` of `k_len` positions (queries) and of all `k_len`
/// (keys), int64 on the CPU: the (q_len, k_len) convention of the bias functions below, as in
/// decoding with a cache.
std::pair<at::Tensor, at::Tensor> last_queries_positions(int64_t q_len, int64_t k_len);

/// The shared part: add bias(layer, heads, i, j) to ScoreTerms::position.
class RelativeBiasEncoding : public PositionEncoding {
 public:
  void add_score_terms(const AttentionInputs& in, ScoreTerms& out) const override;
  bool has_position_scores() const override { return true; }
  /// bias over [0, T)²: these methods' term does not depend on the input.
  at::Tensor static_position_scores(int layer, int64_t T) const override;

 protected:
  /// float32 [n_heads, q, k] for heads [head_begin, head_begin + n_heads) of the model's
  /// (n_heads = -1: all), query positions `i` int64 [q] and key positions `j` int64 [k], on
  /// i's device.
  virtual at::Tensor bias(int layer, int64_t head_begin, int64_t n_heads, const at::Tensor& i,
                          const at::Tensor& j) const = 0;
};

}  // namespace poslens
