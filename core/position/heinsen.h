#pragma once
// Heinsen position encoding by exponentiated states (Heinsen 2024, eq. 1-3;
// glassroom/heinsen_position_embeddings; docs/formulas.md §2 "Heinsen exponentiated states").
//
// Per feature, s_i = log(p_i·exp(s_{i-1}) + exp(h_i)) = logsumexp(log p_i + s_{i-1}, h_i),
// i = 1..T, with the initial state s_0 = 0 (Heinsen 2024: "We set the initial state of all
// position-encoding features to zero"). s_0 = 0 is the LOG of the state, i.e. exp(s_0) = 1
// enters the first step: s_1 = logsumexp(log p_1, h_1), NOT s_1 = h_1. The reference code does
// the same by prepending a zero logit with a* = 0 before the scan, so the parallel form is
//   a*_i = sum_{t<=i} log p_t,
//   s_i  = a*_i + logsumexp(s_0, h_1 - a*_1, ..., h_i - a*_i)
// (docs/formulas.md §2's `a* + logcumsumexp(h - a*)` with the s_0 term included).
#include <ATen/core/Tensor.h>

#include "core/position/components.h"

namespace poslens {

/// Parallel scan (Heinsen 2023). log_p, h: [..., T, d] (log_p = logsigmoid(W_p x + b_p) <= 0,
/// h = W_h x + b_h), floating point, same shape. s0: the initial log-state [..., 1, d] or
/// broadcastable to it (e.g. the last state of a previous chunk, the reference's
/// `prev_context`); an undefined tensor means s_0 = 0. Returns s [..., T, d] (= hook_pe_state),
/// in the common dtype of the inputs; the scan itself runs in float64 (a* and h - a* grow
/// like T and cancel, so float32 would lose accuracy on long sequences).
/// Throws poslens::Error if shapes differ, dim < 2, or s0 does not broadcast.
at::Tensor heinsen_scan(const at::Tensor& log_p, const at::Tensor& h, const at::Tensor& s0 = {});

/// The sequential recurrence s_i = logsumexp(log p_i + s_{i-1}, h_i), one step per position,
/// same arguments and result as heinsen_scan. O(T) steps; the reference for tests.
/// Throws poslens::Error like heinsen_scan.
at::Tensor heinsen_sequential(const at::Tensor& log_p, const at::Tensor& h,
                              const at::Tensor& s0 = {});

/// The weights of Heinsen's encoding (Heinsen 2024 eq. 1-3): H = (W_p, W_h), R = W_R.
struct HeinsenWeights {
  at::Tensor w_p, b_p;  ///< [d_pe, d_model], [d_pe]
  at::Tensor w_h, b_h;  ///< [d_pe, d_model], [d_pe]
  at::Tensor w_r, b_r;  ///< [d_model, d_pe], [d_model]
};

/// Heinsen exponentiated states (Heinsen 2024; glassroom/heinsen_position_embeddings), applied to
/// the token embeddings x: log p = logsigmoid(W_p x + b_p), h = W_h x + b_h,
/// s = heinsen_scan(log p, h) with s_0 = 0, and x += W_R s + b_R.
class HeinsenEncoding : public PositionEncoding {
 public:
  /// Throws poslens::Error if a weight is missing or the shapes disagree.
  explicit HeinsenEncoding(HeinsenWeights w);
  std::string describe() const override;
  /// added = W_R s + b_R [batch, pos, d_model] (hook_pos_embed), pe_state = s [batch, pos, d_pe]
  /// (hook_pe_state). `positions` is unused: position comes from the scan's order.
  InputTerm input_term(const at::Tensor& tok, const at::Tensor& positions) const override;
  bool has_input_term() const override { return true; }
  bool has_pe_state() const override { return true; }
  /// The weights, for the analysis of the states (analysis/heinsen_states.h).
  const HeinsenWeights& weights() const { return w_; }

 private:
  HeinsenWeights w_;
};

/// The "heinsen" component of the PosLens format (docs/poslens-format.md): its parameters,
/// weights (with their initialisation) and checks.
ComponentRecipe heinsen_recipe(const PositionComponentSpec& spec, const PositionContext& c);

}  // namespace poslens
