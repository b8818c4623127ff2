#include "core/models/poslens_model.h"

#include <torch/torch.h>

#include <cmath>
#include <map>
#include <set>

#include "core/base/error.h"
#include "core/base/untrusted_json.h"
#include "core/formats/memory_tensors.h"
#include "core/models/architectures.h"
#include "core/models/hf_config.h"
#include "core/models/model_folder.h"
#include "core/position/alibi.h"

namespace poslens {
namespace {

void require_poslens(const ModelConfig& c, const char* what) {
  if (c.architecture != "PosLens")
    throw Error(std::string(what) + " needs a PosLens-format model (docs/poslens-format.md), not " +
                c.architecture);
}

at::Tensor draw(const WeightInit& init, const std::vector<int64_t>& shape) {
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  switch (init.kind) {
    case WeightInit::Kind::Normal: return torch::randn(shape, f32) * init.a;
    case WeightInit::Kind::Uniform: return torch::rand(shape, f32) * (init.b - init.a) + init.a;
    case WeightInit::Kind::Constant: return torch::full(shape, init.a, f32);
    case WeightInit::Kind::AlibiSlopes: {
      const auto slopes = alibi_slopes(shape.empty() ? 1 : shape.front());
      return -torch::tensor(slopes, torch::kFloat64).to(torch::kFloat32).reshape(shape);
    }
  }
  throw Error("unknown weight initialisation");
}

/// The block's initialisation by stored name and shape (BlockInit's two schemes).
WeightInit block_init(const std::string& name, int64_t fan_in, BlockInit scheme) {
  const bool norm = name.find("norm.") != std::string::npos;
  const bool bias = name.size() >= 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
  if (norm) return {WeightInit::Kind::Constant, bias ? 0.0 : 1.0};
  if (scheme == BlockInit::Gpt2)
    return bias ? WeightInit{WeightInit::Kind::Constant, 0.0} : WeightInit{WeightInit::Kind::Normal, 0.02};
  if (name == "tok_embed.weight") return {WeightInit::Kind::Normal, 1.0};  // nn.Embedding
  // nn.Linear: kaiming_uniform_(a=√5) for the weight and U(±1/√fan_in) for the bias, both
  // U(±1/√fan_in) with the weight's fan_in.
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  return {WeightInit::Kind::Uniform, -bound, bound};
}

}  // namespace

std::vector<std::pair<std::string, at::Tensor>> named_parameters(const ModelConfig& config,
                                                                 const ModelWeights& weights) {
  require_poslens(config, "named_parameters");
  // The PosLens table stores every tensor as the model holds it (no transposes, no fused
  // tensors), so table_tensors hands back the model's own tensors.
  return table_tensors(arch::poslens_table(config), config, weights);
}

ModelConfig poslens_config_from_text(const std::string& json_text, const std::string& where) {
  const auto j = parse_untrusted_json(json_text.data(), json_text.data() + json_text.size(),
                                      where, "config.json");
  const auto type = j.is_object() ? j.find("model_type") : j.end();
  if (!j.is_object() || type == j.end() || *type != "poslens")
    throw Error(where + ": not a PosLens config (needs \"model_type\": \"poslens\")");
  ModelConfig config;
  try {
    config = arch::poslens_config(nlohmann::json::parse(j.dump()), where);
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + ": a field has the wrong type (" + e.what() + ")");
  }
  config.format = "poslens";
  return config;
}

void write_poslens_model(const std::string& dir, const ModelConfig& config,
                         const ModelWeights& weights,
                         const std::function<void(const std::string& folder)>& extra) {
  require_poslens(config, "save");
  write_model_folder(dir, poslens_config_json(config, 2), named_parameters(config, weights),
                     {{"format", "pt"}, {"written_by", "poslens"}}, "save", extra);
}

BlockInit parse_block_init(const std::string& name) {
  if (name == "gpt2") return BlockInit::Gpt2;
  if (name == "pytorch") return BlockInit::PyTorch;
  throw Error("unknown initialisation \"" + name + "\" (choose pytorch or gpt2)");
}

const char* to_string(BlockInit init) { return init == BlockInit::Gpt2 ? "gpt2" : "pytorch"; }

ModelWeights initialize_weights(const ModelConfig& config, uint64_t seed, BlockInit block) {
  require_poslens(config, "initialize_weights");
  std::map<std::string, WeightInit> pe_inits;
  for (const auto& spec : config.pe_components)
    for (const auto& w : component_recipe(spec, config.position_context()).weights)
      pe_inits[w.name] = w.init;

  torch::manual_seed(seed);
  MemoryTensors fresh("freshly initialised weights");
  const auto table = arch::poslens_table(config);
  std::map<std::string, int64_t> fan_in;  // "blocks.{L}.attn.q_proj" -> d_model
  for (const auto& rule : table.rules)
    if (rule.stored_shape.size() == 2)
      fan_in[rule.pattern.substr(0, rule.pattern.rfind('.'))] = rule.stored_shape[1];
  for (const auto& rule : table.rules) {
    const bool per_layer = rule.pattern.find("{L}") != std::string::npos;
    for (int64_t l = 0; l < (per_layer ? config.n_layers : 1); ++l) {
      std::string name = rule.pattern;
      if (per_layer) name.replace(name.find("{L}"), 3, std::to_string(l));
      const auto layer_of = rule.pattern.substr(0, rule.pattern.rfind('.'));
      const auto init = rule.pe_name.empty() ? block_init(name, fan_in[layer_of], block)
                                             : pe_inits.at(rule.pe_name);
      fresh.add(name, draw(init, rule.stored_shape));
    }
  }
  return load_weights(fresh, table, config, torch::kCPU, torch::kFloat32);
}

ModelWeights weights_on(const ModelConfig& config, const ModelWeights& weights, c10::Device device) {
  require_poslens(config, "weights_on");
  MemoryTensors tensors("the model's weights, copied to " + device.str());
  for (const auto& [name, t] : named_parameters(config, weights)) tensors.add(name, t.detach());
  return load_weights(tensors, arch::poslens_table(config), config, device, torch::kFloat32);
}

}  // namespace poslens
