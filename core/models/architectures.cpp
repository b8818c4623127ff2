#include "core/models/architectures.h"

#include <algorithm>
#include <filesystem>

#include "core/models/hf_config.h"
#include "core/base/error.h"
#include "core/base/untrusted_json.h"

namespace poslens {
namespace arch {

ModelConfig hf_decoder_sizes(const nlohmann::json& j, const std::string& architecture,
                             int64_t default_n_ctx, const std::string& where) {
  ModelConfig c;
  c.architecture = architecture;
  c.d_model = require_int(j, "hidden_size", where);
  c.n_layers = require_int(j, "num_hidden_layers", where);
  c.n_heads = require_int(j, "num_attention_heads", where);
  c.n_kv_heads = int_or(j, "num_key_value_heads", c.n_heads, where);
  c.d_head = int_or(j, "head_dim", c.n_heads > 0 ? c.d_model / c.n_heads : 0, where);
  c.d_mlp = require_int(j, "intermediate_size", where);
  c.vocab_size = require_int(j, "vocab_size", where);
  c.n_ctx = int_or(j, "max_position_embeddings", default_n_ctx, where);
  return c;
}

int64_t head_size(int64_t d_model, int64_t n_heads, const char* d_key, const char* heads_key,
                  const std::string& where) {
  if (n_heads <= 0 || d_model % n_heads != 0)
    throw Error(where + ": " + d_key + " " + std::to_string(d_model) + " is not a multiple of " + heads_key + " " +
                std::to_string(n_heads));
  return d_model / n_heads;
}

Activation gelu_from_hf(const std::string& name, const char* key, const std::string& arch,
                        const std::string& where) {
  if (name == "gelu") return Activation::GeluExact;
  if (name == "gelu_new" || name == "gelu_fast" || name == "gelu_pytorch_tanh")
    return Activation::GeluNew;
  throw Error(where + ": " + key + " \"" + name + "\" is not supported for " + arch +
              " (supported: gelu, gelu_new, gelu_fast, gelu_pytorch_tanh)");
}

PositionComponentSpec rope_component(const nlohmann::json& j, double rope_theta,
                                     RopePairing pairing, int64_t rotary_dim) {
  nlohmann::json params{{"type", "rope"},
                        {"rope_theta", rope_theta},
                        {"pairing", to_string(pairing)},
                        {"rotary_dim", rotary_dim}};
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null()) {
    params["rope_scaling"] = j["rope_scaling"];
  } else if (const auto p = j.find("rope_parameters"); p != j.end() && p->is_object()) {
    const auto type = p->value("rope_type", p->value("type", std::string("default")));
    if (type != "default") params["rope_scaling"] = *p;
  }
  return {"rope", params.dump()};
}

PositionComponentSpec layer_type_rope(const nlohmann::json& j, const std::string& type, const nlohmann::json& older,
                                      int64_t d_head, const std::string& where) {
  nlohmann::json params = older;
  if (const auto p = j.find("rope_parameters"); p != j.end() && p->is_object() && p->contains(type)) {
    if (!(*p)[type].is_object()) throw Error(where + ": rope_parameters." + type + " must be an object");
    params = (*p)[type];
  }
  const nlohmann::json holder{{"rope_parameters", params}};
  return rope_component(holder, hf_rope_theta(holder, 1e4, where), RopePairing::HalfSplit, d_head);
}

std::vector<bool> hf_sliding_layers(const nlohmann::json& j, int64_t n_layers, int64_t default_pattern,
                                    const std::string& where) {
  std::vector<bool> sliding;
  if (const auto t = j.find("layer_types"); t != j.end() && t->is_array()) {
    for (size_t l = 0; l < t->size(); ++l) {
      const auto& v = (*t)[l];
      if (v != "sliding_attention" && v != "full_attention")
        throw Error(where + ": layer_types[" + std::to_string(l) + "] " + v.dump() +
                    " is not supported (supported: full_attention, sliding_attention)");
      sliding.push_back(v == "sliding_attention");
    }
  } else {
    const int64_t pattern = int_or(j, "sliding_window_pattern", default_pattern, where);
    if (pattern <= 0) throw Error(where + ": sliding_window_pattern must be positive");
    for (int64_t l = 0; l < n_layers; ++l) sliding.push_back((l + 1) % pattern != 0);
  }
  if (static_cast<int64_t>(sliding.size()) != n_layers)
    throw Error(where + ": layer_types has " + std::to_string(sliding.size()) + " entries for " +
                std::to_string(n_layers) + " layers");
  return sliding;
}

double hf_rope_theta(const nlohmann::json& j, double fallback, const std::string& where) {
  if (const auto p = j.find("rope_parameters"); p != j.end() && p->is_object() && p->contains("rope_theta"))
    return number_or(*p, "rope_theta", fallback, where + " rope_parameters");
  return number_or(j, "rope_theta", fallback, where);
}

at::Tensor stacked_experts_gate_up(const at::Tensor& stacked) {
  const int64_t E = stacked.size(0), d_mlp = stacked.size(1) / 2, d_model = stacked.size(2);
  return stacked.view({E, 2, d_mlp, d_model}).permute({0, 3, 2, 1}).reshape({E, d_model, 2 * d_mlp});
}

at::Tensor stacked_experts_down(const at::Tensor& stacked) { return stacked.transpose(1, 2); }

const nlohmann::json& text_config(const nlohmann::json& j, const std::string& arch, const std::string& where) {
  const auto t = j.find("text_config");
  if (t == j.end() || !t->is_object())
    throw Error(where + ": " + arch + " needs a \"text_config\" object (the text stack's config)");
  return *t;
}

}  // namespace arch

namespace {

/// config.json of real models is a few kB; 16 MB leaves room for huge rope_scaling lists.
constexpr std::uint64_t kMaxConfigBytes = 16'000'000;

/// Every supported architecture: one line per family file (arch_*.cpp).
const std::vector<arch::ArchitectureEntry>& registry() {
  static const auto entries = [] {
    std::vector<arch::ArchitectureEntry> all;
    for (auto family : {arch::llama_family_architectures, arch::gpt2_architectures,
                        arch::gpt_neox_architectures, arch::phi_architectures, arch::phi3_architectures,
                        arch::gemma_architectures, arch::gemma4_architectures, arch::olmo_architectures,
                        arch::bloom_architectures, arch::mpt_architectures, arch::cohere_architectures,
                        arch::gpt_oss_architectures, arch::llama4_architectures, arch::deepseek_architectures,
                        arch::bert_architectures, arch::modernbert_architectures, arch::nanogpt_architectures,
                        arch::transformer_lens_architectures, arch::t5_architectures,
                        arch::poslens_architectures}) {
      auto entries = family();
      all.insert(all.end(), entries.begin(), entries.end());
    }
    return all;
  }();
  return entries;
}

/// The HF architectures, for "supported: ..." messages.
std::string supported_list() {
  std::string list;
  for (const auto& e : registry())
    if (e.read_config && !e.model_type_first) list += (list.empty() ? "" : ", ") + e.name;
  return list;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

/// The entry `architectures[0]` or, without one, `model_type` selects (without either: the
/// entry that recognises the config's keys); null when none does.
const arch::ArchitectureEntry* detect(const nlohmann::json& j, const std::string& arch, const std::string& model_type) {
  if (arch.empty() && model_type.empty())
    for (const auto& e : registry())
      if (e.recognise && e.recognise(j)) return &e;
  for (const auto& e : registry())
    if (e.read_config && e.model_type_first && contains(e.model_types, model_type)) return &e;
  for (const auto& e : registry())
    if (e.read_config && !arch.empty() && e.name == arch) return &e;
  for (const auto& e : registry())
    if (e.read_config && arch.empty() && contains(e.model_types, model_type)) return &e;
  return nullptr;
}

}  // namespace

ModelConfig read_hf_config(const std::string& path) {
  if (!std::filesystem::exists(path))
    throw Error(path + ": cannot open (an HF checkpoint folder needs config.json)");
  // The same size and nesting limits as every other JSON PosLens reads from a checkpoint.
  const nlohmann::json j = read_json_file(path, "config.json", kMaxConfigBytes);
  if (!j.is_object()) throw Error(path + ": expected a JSON object");

  std::string arch;
  const auto archs = j.find("architectures");
  if (archs != j.end() && archs->is_array() && !archs->empty() && (*archs)[0].is_string())
    arch = (*archs)[0].get<std::string>();
  const std::string model_type =
      j.contains("model_type") && j["model_type"].is_string() ? j["model_type"].get<std::string>()
                                                              : std::string();
  const auto* entry = detect(j, arch, model_type);
  if (!entry) {
    const std::string name = arch.empty() ? model_type : arch;
    if (name.empty())
      throw Error(path + ": names no architecture (no \"architectures\" or \"model_type\", and not a "
                         "TransformerLens HookedTransformerConfig) (supported: " + supported_list() + ")");
    throw Error(path + ": unsupported architecture \"" + name + "\" (supported: " + supported_list() + ")");
  }
  ModelConfig config;
  try {
    config = entry->read_config(j, entry->name, path);
    if (config.format.empty()) config.format = "huggingface";
    config.validate();
    for (const auto& spec : config.pe_components) {
      try {
        component_recipe(spec, config.position_context());  // parameters checked before weights
      } catch (const Error& e) {
        throw Error(path + ": " + e.what());
      }
    }
  } catch (const nlohmann::json::exception& e) {  // a field of another type than the reader expects
    throw Error(path + ": a field has the wrong type for " + entry->name + " (" + e.what() + ")");
  }
  return config;
}

WeightTable weight_table_for(const ModelConfig& config, const TensorSource& source) {
  for (const auto& e : registry())
    if (e.name == config.architecture) return e.weight_table(config, source);
  throw Error("no weight table for architecture \"" + config.architecture + "\"");
}

}  // namespace poslens
