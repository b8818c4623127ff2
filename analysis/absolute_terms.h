#pragma once
// Absolute-PE logit decomposition of layer 0 (seed 004; Ke et al. 2020, "Rethinking positional
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

/// `e`, `p`: float [pos, d_model] — hook_embed (after any embedding scale) and hook_pos_embed of
/// one input. Throws poslens::Error for mismatched shapes.
AbsoluteTerms absolute_terms(const Transformer& model, const at::Tensor& e, const at::Tensor& p);

}  // namespace poslens
