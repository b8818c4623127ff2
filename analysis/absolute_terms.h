#pragma once
// Absolute-PE logit decomposition of layer 0 (Kernes 2021; Ke et al. 2020, "Rethinking positional
// encoding in language pre-training" §3): with x = e + p (token plus position embedding), the
// layer-0 logits split into token–token, token–position, position–token and position–position
// terms. The attention norm is linear in x once its scale (σ or RMS) is fixed from x itself, so
// the split is exact; the norm's and projections' biases make a fifth, `bias`, term.
#include <ATen/core/Tensor.h>

#include "core/runtime/transformer.h"

namespace poslens {

struct AbsoluteTerms {
  /// float32 [head, q_pos, k_pos] on the score scale, no mask:
  ///   token_token       scale · (W_q t_i)·(W_k t_j)
  ///   token_position    scale · (W_q t_i)·(W_k u_j)
  ///   position_token    scale · (W_q u_i)·(W_k t_j)
  ///   position_position scale · (W_q u_i)·(W_k u_j)
  ///   bias              every term with a norm bias β or projection bias b_q/b_k
  /// with t = g⊙(e − mean e)/σ, u = g⊙(p − mean p)/σ for LayerNorm (σ of e + p), t = g⊙e/r,
  /// u = g⊙p/r for RMSNorm (r the RMS of e + p). The five sum to layer 0's scale·q·k.
  at::Tensor token_token, token_position, position_token, position_position, bias;
};

/// The five terms for any block of any head, from per-head projections of t, u and the biases
/// (O(T·d), made once): a long input never holds [head, T, T].
class AbsoluteTermsBlocks {
 public:
  /// `e`, `p`: float [pos, d_model] — hook_embed (after any embedding scale) and hook_pos_embed
  /// (the position table) of one input. Throws poslens::Error for mismatched shapes.
  AbsoluteTermsBlocks(const Transformer& model, const at::Tensor& e, const at::Tensor& p);
  /// Head `head`'s terms for query rows [q0, q1) and keys [k0, k1): each float32 [rows, keys] on
  /// the model's device.
  AbsoluteTerms block(int64_t head, int64_t q0, int64_t q1, int64_t k0, int64_t k1) const;

 private:
  at::Tensor qt_, qu_, kt_, ku_, qb_, kb_;  ///< [H, T, d_head] (kv heads repeated)
  double scale_;
};

/// Every head's terms over the whole [T, T] (AbsoluteTermsBlocks of every head, stacked):
/// [head, q_pos, k_pos] each. Same arguments and errors.
AbsoluteTerms absolute_terms(const Transformer& model, const at::Tensor& e, const at::Tensor& p);

}  // namespace poslens
