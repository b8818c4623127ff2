#pragma once
// The position-encoding components of the PosLens format (docs/poslens-format.md): for each
// component type, the weights it needs (so the loader can check their names and shapes) and how
// to build it from the loaded weights. One place knows every type's parameters.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/model_config.h"
#include "core/model_weights.h"
#include "core/position_encoding.h"

namespace poslens {

/// One weight of a component: stored as `pe.<name>` (shared) or `blocks.{L}.attn.pe.<name>`.
struct PeWeightSpec {
  std::string name;
  std::vector<int64_t> shape;
  bool per_layer = false;
  bool optional = false;
};

struct ComponentRecipe {
  std::vector<PeWeightSpec> weights;
  /// Builds the component from weights loaded by the table made from `weights` above.
  std::function<std::unique_ptr<PositionEncoding>(const ModelWeights&)> make;
};

/// The recipe of `spec` for a model shaped like `config` (d_model, n_heads, d_head, n_layers,
/// n_ctx, causal). Throws poslens::Error naming the component and the parameter for an unknown
/// type, an unknown parameter key, a wrong value type or an out-of-range value.
ComponentRecipe component_recipe(const PositionComponentSpec& spec, const ModelConfig& config);

/// Every component type the PosLens format knows, for error messages and docs.
const std::vector<std::string>& component_types();

}  // namespace poslens
