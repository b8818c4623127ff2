#include "core/architectures.h"

#include <fstream>
#include <sstream>

#include "core/arch_common.h"
#include "core/error.h"

namespace poslens {
namespace arch {

namespace {
const nlohmann::json* find_key(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return (it == j.end() || it->is_null()) ? nullptr : &*it;
}
}  // namespace

int64_t require_int(const nlohmann::json& j, const char* key, const std::string& where) {
  const auto* v = find_key(j, key);
  if (!v) throw Error(where + ": missing \"" + key + "\"");
  if (!v->is_number_integer())
    throw Error(where + ": \"" + key + "\" must be an integer, got " + v->dump());
  return v->get<int64_t>();
}

int64_t int_or(const nlohmann::json& j, const char* key, int64_t fallback, const std::string& where) {
  return find_key(j, key) ? require_int(j, key, where) : fallback;
}

double number_or(const nlohmann::json& j, const char* key, double fallback,
                 const std::string& where) {
  const auto* v = find_key(j, key);
  if (!v) return fallback;
  if (!v->is_number()) throw Error(where + ": \"" + key + "\" must be a number, got " + v->dump());
  return v->get<double>();
}

bool bool_or(const nlohmann::json& j, const char* key, bool fallback, const std::string& where) {
  const auto* v = find_key(j, key);
  if (!v) return fallback;
  if (!v->is_boolean()) throw Error(where + ": \"" + key + "\" must be true or false");
  return v->get<bool>();
}

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

Activation gelu_from_hf(const std::string& name, const char* key, const std::string& arch,
                        const std::string& where) {
  if (name == "gelu") return Activation::GeluExact;
  if (name == "gelu_new" || name == "gelu_fast" || name == "gelu_pytorch_tanh")
    return Activation::GeluNew;
  throw Error(where + ": " + key + " \"" + name + "\" is not supported for " + arch +
              " (supported: gelu, gelu_new, gelu_fast, gelu_pytorch_tanh)");
}

std::string choice_or_first(const nlohmann::json& j, const char* key,
                            const std::vector<std::string>& choices, const std::string& where) {
  const auto* v = find_key(j, key);
  if (!v) return choices.front();
  if (v->is_string())
    for (const auto& c : choices)
      if (v->get<std::string>() == c) return c;
  std::string list;
  for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
  throw Error(where + ": \"" + key + "\" must be one of " + list + ", got " + v->dump());
}

}  // namespace arch

namespace {
constexpr const char* kSupported =
    "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, GPT2LMHeadModel, "
    "GPTNeoXForCausalLM, PhiForCausalLM, GemmaForCausalLM, OlmoForCausalLM";
}  // namespace

ModelConfig read_hf_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open (an HF checkpoint folder needs config.json)");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw Error(path + ": expected a JSON object");

  std::string arch;
  const auto archs = j.find("architectures");
  if (archs != j.end() && archs->is_array() && !archs->empty() && (*archs)[0].is_string())
    arch = (*archs)[0].get<std::string>();
  const std::string model_type = j.value("model_type", std::string());

  ModelConfig config;
  if (model_type == "poslens") {
    config = arch::poslens_config(j, path);
    config.format = "poslens";
    return config;
  }
  if (arch == "LlamaForCausalLM" || arch == "MistralForCausalLM" || arch == "Qwen2ForCausalLM" ||
      (arch.empty() && (model_type == "llama" || model_type == "mistral" || model_type == "qwen2"))) {
    if (arch.empty())
      arch = model_type == "llama" ? "LlamaForCausalLM"
             : model_type == "mistral" ? "MistralForCausalLM" : "Qwen2ForCausalLM";
    config = arch::llama_config_from_hf(j, arch, path);
  } else if (arch == "GPT2LMHeadModel" || (arch.empty() && model_type == "gpt2")) {
    config = arch::gpt2_config_from_hf(j, path);
  } else if (arch == "GPTNeoXForCausalLM" || (arch.empty() && model_type == "gpt_neox")) {
    config = arch::gpt_neox_config_from_hf(j, path);
  } else if (arch == "PhiForCausalLM" || (arch.empty() && model_type == "phi")) {
    config = arch::phi_config_from_hf(j, path);
  } else if (arch == "GemmaForCausalLM" || (arch.empty() && model_type == "gemma")) {
    config = arch::gemma_config_from_hf(j, path);
  } else if (arch == "OlmoForCausalLM" || (arch.empty() && model_type == "olmo")) {
    config = arch::olmo_config_from_hf(j, path);
  } else {
    const std::string name = arch.empty() ? model_type : arch;
    const bool later_gemma = name.rfind("Gemma", 0) == 0 || name.rfind("gemma", 0) == 0;
    throw Error(path + ": unsupported architecture \"" + name + "\"" +
                (later_gemma ? " (Gemma 2 and 3 need attention soft-capping and sandwich norms, "
                               "not supported yet)"
                             : "") +
                " (supported: " + kSupported + ")");
  }
  config.format = "huggingface";
  config.validate();
  return config;
}

WeightTable weight_table_for(const ModelConfig& config, const TensorSource& source) {
  if (config.architecture == "llama2.c") return arch::llama2c_table(config);
  if (config.architecture == "PosLens") return arch::poslens_table(config);
  if (config.architecture == "GPT2LMHeadModel") {
    std::string prefix;
    for (const auto& t : source.tensors())
      if (t.name.rfind("transformer.", 0) == 0) {
        prefix = "transformer.";
        break;
      }
    return arch::gpt2_hf_table(config, prefix);
  }
  if (config.architecture == "GPTNeoXForCausalLM") return arch::gpt_neox_hf_table(config);
  if (config.architecture == "PhiForCausalLM") return arch::phi_hf_table(config);
  if (config.architecture == "OlmoForCausalLM") return arch::olmo_hf_table(config);
  return arch::llama_hf_table(config);  // Llama, Mistral, Qwen2, Gemma
}

}  // namespace poslens
