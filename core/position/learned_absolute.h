#pragma once
// Learned absolute position embeddings (GPT-2; SPEC.md §2): h_j = E[x_j] + P[j].
#include "core/position/position_encoding.h"
#include "core/position/components.h"

namespace poslens {

class LearnedAbsoluteEncoding : public PositionEncoding {
 public:
  /// `table` is P, [n_ctx, d_model]. Throws poslens::Error if it is not 2-D.
  explicit LearnedAbsoluteEncoding(at::Tensor table);
  std::string describe() const override;
  /// P[positions] broadcast to tok's [batch, pos, d_model]; positions are 0..T-1, as the
  /// forward pass gives them. Throws poslens::Error if T > n_ctx (the model has no embedding
  /// for the later positions), naming the limit.
  InputTerm input_term(const at::Tensor& tok, const at::Tensor& positions) const override;
  bool has_input_term() const override { return true; }
  at::Tensor position_table(int64_t n_pos) const override;

 private:
  at::Tensor table_;
};

/// The "learned_absolute" component of the PosLens format (docs/poslens-format.md): its parameters,
/// weights (with their initialisation) and checks.
ComponentRecipe learned_absolute_recipe(const PositionComponentSpec& spec, const PositionContext& c);

}  // namespace poslens
