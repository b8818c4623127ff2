#pragma once
// Absolute position components that act on the input (SPEC.md §2): the fixed sinusoidal table
// and Heinsen's exponentiated states. (Learned tables: learned_absolute.h.)
#include "core/heinsen.h"
#include "core/position_encoding.h"
#include "core/sinusoidal.h"

namespace poslens {

/// Vaswani sinusoidal embeddings added to the tokens: P[j, 2k] = sin(j·w_k), P[j, 2k+1] =
/// cos(j·w_k), w_k = 10000^(-2k/d_model) (sinusoidal.h). No weights; any length.
class SinusoidalEncoding : public PositionEncoding {
 public:
  /// Throws poslens::Error if d_model is not even and positive.
  explicit SinusoidalEncoding(int64_t d_model);
  std::string describe() const override;
  /// P[positions] in tok's dtype, broadcast to tok [batch, pos, d_model].
  InputTerm input_term(const at::Tensor& tok, const at::Tensor& positions) const override;
  bool has_input_term() const override { return true; }

 private:
  int64_t d_model_;
};

/// The weights of Heinsen's encoding (seed 002 eq. 1-3): H = (W_p, W_h), R = W_R.
struct HeinsenWeights {
  at::Tensor w_p, b_p;  ///< [d_pe, d_model], [d_pe]
  at::Tensor w_h, b_h;  ///< [d_pe, d_model], [d_pe]
  at::Tensor w_r, b_r;  ///< [d_model, d_pe], [d_model]
};

/// Heinsen exponentiated states (seed 002; glassroom/heinsen_position_embeddings), applied to
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

 private:
  HeinsenWeights w_;
};

}  // namespace poslens
