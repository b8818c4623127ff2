#pragma once
// The position-encoding components of the PosLens format (docs/poslens-format.md) as a table
// of {type name, recipe}. Each method's recipe lives in the file named after it (alibi.h,
// cope.h, rope.h, ...): it parses and checks the component's parameters, lists the weights it
// needs (so the loader can check their names and shapes) and builds the encoding from them.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/position/position_encoding.h"

namespace poslens {

/// One component as written in config.json: its type ("rope", "cope", "t5", ...) and its
/// parameters, the JSON object text, which the component's recipe parses itself.
struct PositionComponentSpec {
  std::string type;
  std::string params_json = "{}";
};

/// What a recipe needs to know of the model around it.
struct PositionContext {
  int64_t d_model = 0;
  int64_t n_heads = 0;
  int64_t d_head = 0;
  int64_t n_layers = 0;
  int64_t n_ctx = 0;   ///< training context length L
  bool causal = true;
};

/// The loaded position-encoding weights by name: `pe.<name>` (shared) and
/// `blocks.{L}.attn.pe.<name>` (per layer), shapes already checked against the recipe.
struct PositionWeights {
  std::map<std::string, at::Tensor> shared;
  std::vector<std::map<std::string, at::Tensor>> layers;  ///< one map per layer
  c10::Device device = c10::Device(c10::kCPU);            ///< the model's device

  /// The weight `name` of every layer: the shared `pe.<name>` repeated, or each layer's own;
  /// undefined tensors where absent (optional weights).
  std::vector<at::Tensor> per_layer(const std::string& name, bool shared_across_layers) const;
  /// The shared weight `pe.<name>`. Throws poslens::Error if it was not loaded.
  at::Tensor model_level(const std::string& name) const;
};

/// How a component's weight is initialised when a model is trained from scratch, following
/// the method's reference implementation (each recipe says which).
struct WeightInit {
  enum class Kind {
    Normal,       ///< N(0, a²)
    Uniform,      ///< U(a, b)
    Constant,     ///< every entry a
    AlibiSlopes,  ///< -m_h of ALiBi for the weight's n_heads entries (CoPE_ALiBi's decay)
  };
  Kind kind = Kind::Normal;
  double a = 0.02;
  double b = 0.0;
  /// nn.Linear's default (kaiming_uniform with a=sqrt(5)): U(±1/sqrt(fan_in)), for weight and bias.
  static WeightInit linear_default(int64_t fan_in);
};

/// One weight of a component: stored as `pe.<name>` (shared) or `blocks.{L}.attn.pe.<name>`.
struct PeWeightSpec {
  std::string name;
  std::vector<int64_t> shape;
  bool per_layer = false;
  bool optional = false;
  WeightInit init{};
};

struct ComponentRecipe {
  std::vector<PeWeightSpec> weights;
  /// Builds the component from weights loaded by the table made from `weights` above.
  std::function<std::unique_ptr<PositionEncoding>(const PositionWeights&)> make;
};

/// A recipe maker: parses `spec`'s parameters for a model shaped like `context`. Throws
/// poslens::Error naming the component and the parameter for an unknown parameter key, a
/// wrong value type or an out-of-range value.
using RecipeFn = ComponentRecipe (*)(const PositionComponentSpec& spec,
                                     const PositionContext& context);

struct ComponentType {
  const char* name;
  RecipeFn recipe;
};

/// Every component type of the PosLens format, in documentation order.
const std::vector<ComponentType>& component_table();

/// The components as config.json writes them: a JSON array (one line) of their parameter
/// objects, each with its "type".
std::string components_json(const std::vector<PositionComponentSpec>& specs);

/// The recipe of `spec`. Throws poslens::Error for an unknown type (listing the known ones)
/// and whatever the type's recipe throws.
ComponentRecipe component_recipe(const PositionComponentSpec& spec, const PositionContext& context);

/// The encoding of a list of components with their loaded weights: NoPE for an empty list,
/// the component itself for one, a ComposedEncoding for several. Throws poslens::Error from the
/// recipes and from ComposedEncoding's checks.
std::unique_ptr<PositionEncoding> make_components_encoding(
    const std::vector<PositionComponentSpec>& specs, const PositionContext& context,
    const PositionWeights& weights);

}  // namespace poslens
