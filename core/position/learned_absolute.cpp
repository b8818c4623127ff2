#include "core/position/learned_absolute.h"

#include <torch/torch.h>

#include "core/base/error.h"
#include "core/position/component_params.h"

namespace poslens {

LearnedAbsoluteEncoding::LearnedAbsoluteEncoding(at::Tensor table, int64_t offset)
    : table_(std::move(table)), offset_(offset) {
  if (!table_.defined() || table_.dim() != 2)
    throw Error("learned absolute position embedding must be a [n_ctx, d_model] table");
  if (offset < 0 || offset >= table_.size(0))
    throw Error("learned absolute positions: offset " + std::to_string(offset) +
                " leaves no row of the " + std::to_string(table_.size(0)) + "-row table");
}

// The table is narrowed where it is read, not once here: a trainer makes the weight require
// grad after the model is built, and a view taken before would not carry its gradient.
at::Tensor LearnedAbsoluteEncoding::rows() const {
  return offset_ ? table_.narrow(0, offset_, table_.size(0) - offset_) : table_;
}

std::string LearnedAbsoluteEncoding::describe() const {
  return "learned absolute (n_ctx=" + std::to_string(table_.size(0) - offset_) +
         (offset_ ? ", offset " + std::to_string(offset_) : std::string()) + ")";
}

InputTerm LearnedAbsoluteEncoding::input_term(const at::Tensor& tok,
                                              const at::Tensor& positions) const {
  // Positions are 0..T-1 (Transformer::forward), so the length alone decides; no .item()
  // (which would synchronise with the device on every forward).
  const auto table = rows();
  if (positions.size(0) > table.size(0))
    throw Error("sequence of " + std::to_string(positions.size(0)) +
                " tokens is longer than the model's learned positions (n_ctx=" +
                std::to_string(table.size(0)) + ")");
  return {table.index_select(0, positions.to(table.device())).unsqueeze(0).expand_as(tok), {}};
}

at::Tensor LearnedAbsoluteEncoding::position_table(int64_t n_pos) const {
  const auto table = rows();
  if (n_pos < 0 || n_pos > table.size(0))
    throw Error("learned absolute positions: asked for " + std::to_string(n_pos) +
                " positions, the table has n_ctx=" + std::to_string(table.size(0)));
  return table.slice(0, 0, n_pos).to(torch::kFloat32);
}

ComponentRecipe learned_absolute_recipe(const PositionComponentSpec& spec, const PositionContext& c) {
  const ComponentParams p(spec, {"offset"});
  const int64_t offset = p.integer("offset", 0);
  p.at_least("offset", offset, 0);
  // Init: N(0, 0.02²), GPT-2's (HF GPT2PreTrainedModel, initializer_range 0.02).
  return {{{"pos_embed", {c.n_ctx + offset, c.d_model}, false, false, {WeightInit::Kind::Normal, 0.02}}},
          [offset](const PositionWeights& w) {
            return std::make_unique<LearnedAbsoluteEncoding>(w.model_level("pos_embed"), offset);
          }};
}

}  // namespace poslens
