#pragma once
// Learned absolute position embeddings (GPT-2; docs/formulas.md §2): h_j = E[x_j] + P[j].
#include "core/position/position_encoding.h"
#include "core/position/components.h"

namespace poslens {

class LearnedAbsoluteEncoding : public PositionEncoding {
 public:
  /// `table` is P, [offset + n_ctx, d_model]; position j reads row j + offset (RoBERTa:
  /// offset padding_idx + 1 = 2, HF `create_position_ids_from_input_ids` on text without
  /// padding). Throws poslens::Error if it is not 2-D or has no row past the offset.
  explicit LearnedAbsoluteEncoding(at::Tensor table, int64_t offset = 0);
  std::string describe() const override;
  /// P[positions] broadcast to tok's [batch, pos, d_model]; positions are 0..T-1, as the
  /// forward pass gives them. Throws poslens::Error if T > n_ctx (the model has no embedding
  /// for the later positions), naming the limit.
  InputTerm input_term(const at::Tensor& tok, const at::Tensor& positions) const override;
  bool has_input_term() const override { return true; }
  at::Tensor position_table(int64_t n_pos) const override;

 private:
  at::Tensor rows() const;  ///< the table's rows of positions 0, 1, ... (after the offset)
  at::Tensor table_;
  int64_t offset_ = 0;
};

/// The "learned_absolute" component of the PosLens format (docs/poslens-format.md): its parameters
/// ("offset", default 0: the table then has n_ctx + offset rows), weights (with their
/// initialisation) and checks.
ComponentRecipe learned_absolute_recipe(const PositionComponentSpec& spec, const PositionContext& c);

}  // namespace poslens
