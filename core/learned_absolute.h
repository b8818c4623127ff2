#pragma once
// Learned absolute position embeddings (GPT-2; SPEC.md §2): h_j = E[x_j] + P[j].
#include "core/position_encoding.h"

namespace poslens {

class LearnedAbsoluteEncoding : public PositionEncoding {
 public:
  /// `table` is P, [n_ctx, d_model]. Throws poslens::Error if it is not 2-D.
  explicit LearnedAbsoluteEncoding(at::Tensor table);
  std::string describe() const override;
  /// P[positions] broadcast to tok's [batch, pos, d_model]. Throws poslens::Error if a position
  /// is >= n_ctx (the model has no embedding for it), naming the limit.
  InputTerm input_term(const at::Tensor& tok, const at::Tensor& positions) const override;
  bool has_input_term() const override { return true; }

 private:
  at::Tensor table_;
};

}  // namespace poslens
