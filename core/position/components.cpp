#include "core/position/components.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "core/position/alibi.h"
#include "core/position/component_params.h"
#include "core/position/cope.h"
#include "core/position/fire.h"
#include "core/position/heinsen.h"
#include "core/position/hope.h"
#include "core/position/kerple.h"
#include "core/position/learned_absolute.h"
#include "core/position/rope.h"
#include "core/position/shaw.h"
#include "core/position/sinusoidal.h"
#include "core/position/t5.h"
#include "core/position/transformer_xl.h"

namespace poslens {
namespace {

/// NoPE as a component: no weights, nothing added (position only through the causal mask).
ComponentRecipe none_recipe(const PositionComponentSpec& spec, const PositionContext&) {
  ComponentParams(spec, {});
  return {{}, [](const PositionWeights&) { return std::make_unique<NoPositionEncoding>(); }};
}

}  // namespace

const std::vector<ComponentType>& component_table() {
  static const std::vector<ComponentType> table{
      {"none", none_recipe},
      {"learned_absolute", learned_absolute_recipe},
      {"sinusoidal", sinusoidal_recipe},
      {"heinsen", heinsen_recipe},
      {"rope", rope_recipe},
      {"hope", hope_recipe},
      {"alibi", alibi_recipe},
      {"shaw", shaw_recipe},
      {"t5", t5_recipe},
      {"transformer_xl", transformer_xl_recipe},
      {"kerple", kerple_recipe},
      {"fire", fire_recipe},
      {"cope", cope_recipe},
  };
  return table;
}

std::string components_json(const std::vector<PositionComponentSpec>& specs) {
  auto list = nlohmann::ordered_json::array();
  for (const auto& spec : specs) {
    auto params = nlohmann::ordered_json::parse(spec.params_json);
    params["type"] = spec.type;
    list.push_back(params);
  }
  return list.dump();
}

ComponentRecipe component_recipe(const PositionComponentSpec& spec, const PositionContext& c) {
  for (const auto& t : component_table())
    if (spec.type == t.name) return t.recipe(spec, c);
  std::string list;
  for (const auto& t : component_table()) list += (list.empty() ? "" : ", ") + std::string(t.name);
  throw Error("unknown position_encoding type \"" + spec.type + "\" (known: " + list + ")");
}

WeightInit WeightInit::linear_default(int64_t fan_in) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in > 0 ? fan_in : 1));
  return {Kind::Uniform, -bound, bound};
}

std::vector<at::Tensor> PositionWeights::per_layer(const std::string& name,
                                                   bool shared_across_layers) const {
  std::vector<at::Tensor> out;
  for (const auto& layer : layers) {
    const auto& map = shared_across_layers ? shared : layer;
    const auto it = map.find(name);
    out.push_back(it == map.end() ? at::Tensor() : it->second);
  }
  return out;
}

at::Tensor PositionWeights::model_level(const std::string& name) const {
  const auto it = shared.find(name);
  if (it == shared.end()) throw Error("position encoding weight pe." + name + " was not loaded");
  return it->second;
}

std::unique_ptr<PositionEncoding> make_components_encoding(
    const std::vector<PositionComponentSpec>& specs, const PositionContext& context,
    const PositionWeights& weights) {
  std::vector<std::unique_ptr<PositionEncoding>> parts;
  for (const auto& spec : specs) parts.push_back(component_recipe(spec, context).make(weights));
  if (parts.empty()) return std::make_unique<NoPositionEncoding>();
  if (parts.size() == 1) return std::move(parts.front());
  return std::make_unique<ComposedEncoding>(std::move(parts));
}

}  // namespace poslens
