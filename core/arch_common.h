#pragma once
// Internal to core: helpers shared by the per-architecture files (arch_*.cpp).
#include <string>

#include <nlohmann/json.hpp>

#include "core/model_config.h"
#include "core/weight_table.h"

namespace poslens::arch {

/// A required integer/number key of config.json; Error "config.json: missing \"hidden_size\"".
int64_t require_int(const nlohmann::json& j, const char* key, const std::string& where);
double number_or(const nlohmann::json& j, const char* key, double fallback, const std::string& where);
int64_t int_or(const nlohmann::json& j, const char* key, int64_t fallback, const std::string& where);
bool bool_or(const nlohmann::json& j, const char* key, bool fallback, const std::string& where);
/// An integer token id, or -1 when the key is absent, null or not an integer.
int64_t optional_token_id(const nlohmann::json& j, const char* key);
/// HF `rope_scaling` ({"rope_type" | "type", "factor", ...}, modeling_rope_utils) of config
/// object `j` into RopeScaling, for c.rope_theta, c.rotary_dim and c.n_ctx; checked by computing
/// the frequencies once, so bad parameters fail at load (Error "<where>: rope_scaling: ...").
RopeScaling rope_scaling_from_hf(const nlohmann::json& j, const ModelConfig& c,
                                 const std::string& where);

/// The GELU variants of HF `hidden_act`-style keys: "gelu" is exact, "gelu_new", "gelu_fast"
/// and "gelu_pytorch_tanh" the tanh approximation. Error "<where>: <key> \"relu\" is not
/// supported for <arch> (supported: ...)" otherwise.
Activation gelu_from_hf(const std::string& name, const char* key, const std::string& arch,
                        const std::string& where);
/// A choice among `choices` for key (the first when absent or null); Error naming the key and
/// the allowed values otherwise.
std::string choice_or_first(const nlohmann::json& j, const char* key,
                            const std::vector<std::string>& choices, const std::string& where);

/// The sizes every HF decoder config names the same way: hidden_size, num_hidden_layers,
/// num_attention_heads, num_key_value_heads (default: num_attention_heads), head_dim (default:
/// hidden_size / num_attention_heads), intermediate_size, vocab_size, max_position_embeddings
/// (default `default_n_ctx`); with `architecture` set and everything else at its default.
ModelConfig hf_decoder_sizes(const nlohmann::json& j, const std::string& architecture,
                             int64_t default_n_ctx, const std::string& where);

ModelConfig llama_config_from_hf(const nlohmann::json& j, const std::string& arch,
                                 const std::string& where);
ModelConfig gpt2_config_from_hf(const nlohmann::json& j, const std::string& where);
ModelConfig gpt_neox_config_from_hf(const nlohmann::json& j, const std::string& where);
ModelConfig phi_config_from_hf(const nlohmann::json& j, const std::string& where);
ModelConfig gemma_config_from_hf(const nlohmann::json& j, const std::string& where);
ModelConfig olmo_config_from_hf(const nlohmann::json& j, const std::string& where);

/// The PosLens format (docs/poslens-format.md): config and weight table; the components'
/// parameters are checked when the config is read.
ModelConfig poslens_config(const nlohmann::json& j, const std::string& where);
WeightTable poslens_table(const ModelConfig& c);

WeightTable llama2c_table(const ModelConfig& c);
WeightTable llama_hf_table(const ModelConfig& c);  ///< also GemmaForCausalLM
WeightTable gpt2_hf_table(const ModelConfig& c, const std::string& prefix);
WeightTable gpt_neox_hf_table(const ModelConfig& c);
WeightTable phi_hf_table(const ModelConfig& c);
WeightTable olmo_hf_table(const ModelConfig& c);

}  // namespace poslens::arch
