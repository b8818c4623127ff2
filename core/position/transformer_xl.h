#pragma once
// Transformer-XL relative position scores (Dai et al. 2019; kimiyoung/transformer-xl) and the
// O(n) "rel-shift" that turns scores against a distance table into scores per key position
// (Kernes 2021 "Code and algorithm"; docs/formulas.md §2 "Transformer-XL").
//
// Conventions (all functions): q [B, H, Q, d], keys [B, H, K, d] with Q <= K. Query i sits at
// absolute position i + M with M = K - Q (the memory length of Transformer-XL; M = 0 without
// memory), key j at position j, so the causal distance is i + M - j, allowed where it is >= 0.
// Distance tables are indexed by distance: r_by_distance [D, d] (shared by heads) or
// [H, D, d] (per head), row t = the vector for distance t.
#include <cstdint>

#include <ATen/core/Tensor.h>

#include "core/position/components.h"

namespace poslens {

/// The reference rel-shift (kimiyoung/transformer-xl `_rel_shift`, Kernes 2021 "time increases
/// left-to-right"): pad one zero column on the left of x [..., Q, K], view the result as
/// [..., K+1, Q], drop the first row, view back as [..., Q, K].
/// If x[..., i, c] was computed against the table ordered by DESCENDING distance
/// (column c <-> distance K-1-c), then out[..., i, j] = x[..., i, j + Q-1-i], i.e. the score
/// for distance i + M - j, for every j <= i + M. Entries j > i + M are leftovers of the trick
/// (zeros and values of the next row), exactly as in the reference; callers mask them.
/// Throws poslens::Error if x has fewer than 2 dims or Q > K.
at::Tensor rel_shift(const at::Tensor& x);

/// The mirror shift (Kernes 2021 "time increases right-to-left"): pad one zero column on the
/// right of x [..., T, T], view as [..., T+1, T], drop the LAST row, view back as [..., T, T].
/// If x[..., i, c] was computed against the table ordered by ASCENDING distance
/// (column c <-> distance c), then out[..., i, j] = x[..., i, j - i] for every j >= i
/// (entries j < i are leftovers). Throws poslens::Error unless x is [..., T, T].
at::Tensor rel_shift_right(const at::Tensor& x);

/// The article's bi-directional combination for non-causal models (Kernes 2021 "If time is
/// bi-directional": masks from the lower and upper triangles of a [T, T] matrix of ones):
///   out[i, j] = rel_shift(x_left)[i, j]        for j <= i  (lower triangle with diagonal),
///   out[i, j] = rel_shift_right(x_right)[i, j] for j >  i  (strict upper triangle).
/// x_left [..., T, T] is against the table for keys on the left (column c <-> distance T-1-c),
/// x_right [..., T, T] against the table for keys on the right (column c <-> distance c); with
/// one table for both directions the result is q_i · r[|i - j|] (the article's |i - j| matrix).
/// Throws poslens::Error unless both are [..., T, T] with equal shapes.
at::Tensor rel_shift_bidirectional(const at::Tensor& x_left, const at::Tensor& x_right);

/// O(n^2) reference by direct gather. causal (bidirectional = false):
///   out[b, h, i, j] = q[b, h, i] · r[(h,) i + M - j] for j <= i + M, 0 for j > i + M;
/// bidirectional = true: out[b, h, i, j] = q[b, h, i] · r[(h,) |i + M - j|] for all (i, j).
/// q [B, H, Q, d]; r_by_distance [D, d] or [H, D, d]; returns [B, H, Q, k_len] in the
/// common dtype of q and r. Throws poslens::Error on bad shapes, Q > k_len, or D smaller than
/// the largest distance needed + 1.
at::Tensor relative_scores_direct(const at::Tensor& q, const at::Tensor& r_by_distance,
                                  int64_t k_len, bool bidirectional = false);

/// The same causal scores via the O(n) trick: q · (r[k_len-1], ..., r[0])^T, then rel_shift;
/// entries j > i + M set to 0. Equals relative_scores_direct(q, r, k_len, false).
/// Throws poslens::Error on bad shapes, Q > k_len or D < k_len.
at::Tensor relative_scores_shifted(const at::Tensor& q, const at::Tensor& r_by_distance,
                                   int64_t k_len);

/// The bi-directional scores via rel_shift_bidirectional (Q must equal T = k_len; M = 0):
/// left table r[T-1..0], right table r[0..T-1]. Equals relative_scores_direct(q, r, T, true).
/// Throws poslens::Error on bad shapes or D < T.
at::Tensor relative_scores_bidirectional(const at::Tensor& q, const at::Tensor& r_by_distance);

/// The Transformer-XL table R over descending distances K-1, ..., 0 as in the reference
/// (`pos_seq = arange(klen-1, -1, -1)`, `PositionalEmbedding` = [sin | cos] concatenated,
/// SinusoidalLayout::Concatenated): float32 [k_len, d_model]. Row c is distance k_len-1-c.
/// Throws poslens::Error if k_len < 1 or d_model is not even and positive.
at::Tensor txl_relative_embedding(int64_t k_len, int64_t d_model);

/// Position-only term of Transformer-XL, on the score scale (docs/formulas.md §1 hook_pos_scores):
///   pos[b, h, i, j] = ((q_i + v_h) · r_proj[(h,) c = K-1-(i+M-j)]) * scale   for j <= i + M,
///   0 for j > i + M (masked by the caller).
/// r_proj [K, d] or [H, K, d] = W_R R with R from txl_relative_embedding (rows in DESCENDING
/// distance order, the reference's r_head_k); v [H, d] the global position bias.
/// Throws poslens::Error on bad shapes or Q > K.
at::Tensor txl_position_scores(const at::Tensor& q, const at::Tensor& r_proj, const at::Tensor& v,
                               double scale);

/// Test references (not on the runtime path): a second, direct form of a formula the runtime
/// computes elsewhere, kept so tests can check the runtime against it. Never call from core.
namespace reference {
/// Full Transformer-XL logits [B, H, Q, K] (reference `RelPartialLearnableMultiHeadAttn`):
///   ((q_i + u_h) · k_j + (q_i + v_h) · W_R R_{i+M-j}) * scale,  scale usually 1/sqrt(d).
/// q [B, H, Q, d], k [B, H, K, d], r_proj as in txl_position_scores, u, v [H, d]. Entries
/// j > i + M carry only the content term; the caller applies the causal mask.
/// Throws poslens::Error on bad shapes or Q > K.
at::Tensor txl_scores(const at::Tensor& q, const at::Tensor& k, const at::Tensor& r_proj,
                      const at::Tensor& u, const at::Tensor& v, double scale);
}  // namespace reference

/// Transformer-XL's weights for one layer (kimiyoung/transformer-xl RelPartialLearnable).
struct TxlWeights {
  at::Tensor r_proj;  ///< W_R, [n_heads·d_head, d_model] (the reference's r_net, no bias)
  at::Tensor u, v;    ///< [n_heads, d_head] (r_w_bias, r_r_bias)
};

/// Transformer-XL relative attention without memory:
///   logits = scale·((q_i + u)·k_j + (q_i + v)·W_R R_{i-j}),
/// R sinusoidal [sin | cos] over d_model. hook_pos_scores is the second term; (u·k)·scale is
/// added to the logits as content. Non-causal models use R_{|i-j|} (the article's bi-directional
/// rel-shift).
class TransformerXlEncoding : public PositionEncoding {
 public:
  /// One TxlWeights per layer. Throws poslens::Error if shapes disagree with n_heads / d_head.
  TransformerXlEncoding(std::vector<TxlWeights> layers, int64_t n_heads, int64_t d_head,
                        bool causal, bool shared);
  std::string describe() const override;
  void add_score_terms(const AttentionInputs& in, ScoreTerms& out) const override;
  bool has_position_scores() const override { return true; }

 private:
  std::vector<TxlWeights> layers_;
  int64_t n_heads_, d_head_;
  bool causal_, shared_;
};

/// The "transformer_xl" component of the PosLens format (docs/poslens-format.md): its parameters,
/// weights (with their initialisation) and checks.
ComponentRecipe transformer_xl_recipe(const PositionComponentSpec& spec, const PositionContext& c);

}  // namespace poslens
