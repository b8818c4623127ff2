#include "core/runtime/per_layer_inputs.h"

#include <torch/torch.h>

#include <cmath>
#include <utility>

#include "core/runtime/blocks.h"

namespace poslens {

PerLayerInputs::PerLayerInputs(const ModelConfig& c, const ModelWeights& w, at::Tensor ids, at::Tensor embedded)
    : c_(c), w_(w), ids_(std::move(ids)), embedded_(std::move(embedded)) {}

at::Tensor PerLayerInputs::layer(int64_t l) const {
  const int64_t P = c_.per_layer_input_width, B = ids_.size(0), T = ids_.size(1);
  const auto projection = at::linear(embedded_, w_.per_layer_model_projection.narrow(0, l * P, P)) *
                          (1.0 / std::sqrt(static_cast<double>(c_.d_model)));
  const auto context = blocks::norm(c_, projection, w_.per_layer_projection_norm, {});
  auto token = w_.per_layer_embed.narrow(1, l * P, P).index_select(0, ids_.flatten()).view({B, T, P});
  token = token * torch::scalar_tensor(std::sqrt(static_cast<double>(P)), token.options());
  return (context + token) * (1.0 / std::sqrt(2.0));
}

at::Tensor add_per_layer_input(const ModelConfig& c, const LayerWeights& w, const at::Tensor& x,
                               const at::Tensor& per_layer_input) {
  const auto gated = blocks::activation(c.activation, at::linear(x, w.per_layer_gate)) * per_layer_input;
  return x + blocks::norm(c, at::linear(gated, w.per_layer_projection), w.per_layer_norm, {});
}

}  // namespace poslens
