#include "core/position/learned_absolute.h"

#include <torch/torch.h>

#include "core/base/error.h"
#include "core/position/component_params.h"

namespace poslens {

LearnedAbsoluteEncoding::LearnedAbsoluteEncoding(at::Tensor table) : table_(std::move(table)) {
  if (!table_.defined() || table_.dim() != 2)
    throw Error("learned absolute position embedding must be a [n_ctx, d_model] table");
}

std::string LearnedAbsoluteEncoding::describe() const {
  return "learned absolute (n_ctx=" + std::to_string(table_.size(0)) + ")";
}

InputTerm LearnedAbsoluteEncoding::input_term(const at::Tensor& tok,
                                              const at::Tensor& positions) const {
  // Positions are 0..T-1 (Transformer::forward), so the length alone decides; no .item()
  // (which would synchronise with the device on every forward).
  if (positions.size(0) > table_.size(0))
    throw Error("sequence of " + std::to_string(positions.size(0)) +
                " tokens is longer than the model's learned positions (n_ctx=" +
                std::to_string(table_.size(0)) + ")");
  return {table_.index_select(0, positions.to(table_.device())).unsqueeze(0).expand_as(tok), {}};
}

at::Tensor LearnedAbsoluteEncoding::position_table(int64_t n_pos) const {
  if (n_pos < 0 || n_pos > table_.size(0))
    throw Error("learned absolute positions: asked for " + std::to_string(n_pos) +
                " positions, the table has n_ctx=" + std::to_string(table_.size(0)));
  return table_.slice(0, 0, n_pos).to(torch::kFloat32);
}

ComponentRecipe learned_absolute_recipe(const PositionComponentSpec& spec, const PositionContext& c) {
  ComponentParams(spec, {});
  // Init: N(0, 0.02²), GPT-2's (HF GPT2PreTrainedModel, initializer_range 0.02).
  return {{{"pos_embed", {c.n_ctx, c.d_model}, false, false, {WeightInit::Kind::Normal, 0.02}}}, [](const PositionWeights& w) {
            return std::make_unique<LearnedAbsoluteEncoding>(w.model_level("pos_embed"));
          }};
}

}  // namespace poslens
