#include "core/models/poslens_model.h"

#include <torch/torch.h>

#include <map>
#include <set>

#include "core/base/error.h"
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

/// Tensors held in memory, so that fresh weights go through the same loader (and its checks)
/// as weights read from a file.
class MemoryTensors : public TensorSource {
 public:
  void add(std::string name, at::Tensor t) {
    infos_.push_back({name, StoredDType::F32, t.sizes().vec()});
    tensors_.emplace(std::move(name), std::move(t));
  }
  const std::vector<TensorInfo>& tensors() const override { return infos_; }
  at::Tensor load(const std::string& name) const override { return tensors_.at(name); }
  std::string describe() const override { return "freshly initialised weights"; }

 private:
  std::vector<TensorInfo> infos_;
  std::map<std::string, at::Tensor> tensors_;
};

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

/// The block's initialisation by stored name (HF GPT-2/Llama _init_weights, range 0.02).
WeightInit block_init(const std::string& name) {
  const bool bias = name.size() >= 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
  if (bias) return {WeightInit::Kind::Constant, 0.0};
  if (name.find("norm.weight") != std::string::npos) return {WeightInit::Kind::Constant, 1.0};
  return {WeightInit::Kind::Normal, 0.02};
}

}  // namespace

std::vector<std::pair<std::string, at::Tensor>> named_parameters(const ModelConfig& config,
                                                                 const ModelWeights& weights) {
  require_poslens(config, "named_parameters");
  // The PosLens table stores every tensor as the model holds it (no transposes, no fused
  // tensors), so table_tensors hands back the model's own tensors.
  return table_tensors(arch::poslens_table(config), config, weights);
}

void write_poslens_model(const std::string& dir, const ModelConfig& config,
                         const ModelWeights& weights) {
  require_poslens(config, "save");
  write_model_folder(dir, poslens_config_json(config, 2), named_parameters(config, weights),
                     {{"format", "pt"}, {"written_by", "poslens"}}, "save");
}

ModelWeights initialize_weights(const ModelConfig& config, uint64_t seed) {
  require_poslens(config, "initialize_weights");
  std::map<std::string, WeightInit> pe_inits;
  for (const auto& spec : config.pe_components)
    for (const auto& w : component_recipe(spec, config.position_context()).weights)
      pe_inits[w.name] = w.init;

  torch::manual_seed(seed);
  MemoryTensors fresh;
  const auto table = arch::poslens_table(config);
  for (const auto& rule : table.rules) {
    const bool per_layer = rule.pattern.find("{L}") != std::string::npos;
    for (int64_t l = 0; l < (per_layer ? config.n_layers : 1); ++l) {
      std::string name = rule.pattern;
      if (per_layer) name.replace(name.find("{L}"), 3, std::to_string(l));
      const auto init = rule.pe_name.empty() ? block_init(name) : pe_inits.at(rule.pe_name);
      fresh.add(name, draw(init, rule.stored_shape));
    }
  }
  return load_weights(fresh, table, config, torch::kCPU, torch::kFloat32);
}

}  // namespace poslens
