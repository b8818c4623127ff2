#pragma once
// Internal to models/: helpers shared by the per-architecture files (arch_*.cpp).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/json_fields.h"
#include "core/models/model_config.h"
#include "core/position/rope_scaling.h"
#include "core/models/weight_table.h"

namespace poslens::arch {

using fields::bool_or;
using fields::choice_or_first;
using fields::int_or;
using fields::number_or;
using fields::optional_token_id;
using fields::require_int;
/// The RoPE base θ of an HF config: `rope_parameters.rope_theta` (transformers ≥ 5 writes it
/// there), else the top-level `rope_theta`, else `fallback`. Throws poslens::Error naming
/// `where` for a value that is not a number.
double hf_rope_theta(const nlohmann::json& j, double fallback, const std::string& where);
/// The "rope" component of an HF-style config (one representation of RoPE for every format):
/// `rope_theta`, `pairing`, `rotary_dim`, and `j`'s "rope_scaling" passed on as HF writes it —
/// or, from transformers ≥ 5, its `rope_parameters` when their rope_type is not "default" (the
/// rope recipe reads and checks it when the config is read).
PositionComponentSpec rope_component(const nlohmann::json& j, double rope_theta,
                                     RopePairing pairing, int64_t rotary_dim);
/// The half-split "rope" component of one layer type ("full_attention" / "sliding_attention")
/// of a model with a base per layer type (Gemma 3, ModernBERT): `rope_parameters.<type>` as
/// transformers 5 writes it, else `older`, the parameters the family's older keys give
/// (rope_type, rope_theta, scaling). Throws poslens::Error when rope_parameters.<type> is not
/// an object.
PositionComponentSpec layer_type_rope(const nlohmann::json& j, const std::string& type, const nlohmann::json& older,
                                      int64_t d_head, const std::string& where);
/// Which layers are local (sliding-window): HF `layer_types` ("sliding_attention" /
/// "full_attention", one per layer) or, in configs written before transformers added it, every
/// `sliding_window_pattern`-th layer (default `default_pattern`) global and the others local
/// (Gemma 2/3, Cohere 2). Throws poslens::Error for another count or type, or a pattern ≤ 0.
std::vector<bool> hf_sliding_layers(const nlohmann::json& j, int64_t n_layers, int64_t default_pattern,
                                    const std::string& where);
/// Which layers rotate q and k (SmolLM3, Llama 4): HF `no_rope_layers` (1: RoPE, 0: NoPE, one
/// entry per layer) or, without it, all but every `no_rope_layer_interval`-th (default 4th)
/// layer. Throws poslens::Error for a non-integer entry, another count or an interval ≤ 0.
std::vector<bool> hf_rope_layers(const nlohmann::json& j, int64_t n_layers, const std::string& where);
/// The GELU variants of HF `hidden_act`-style keys: "gelu" is exact, "gelu_new", "gelu_fast"
/// and "gelu_pytorch_tanh" the tanh approximation. Error "<where>: <key> \"relu\" is not
/// supported for <arch> (supported: ...)" otherwise.
Activation gelu_from_hf(const std::string& name, const char* key, const std::string& arch,
                        const std::string& where);
/// d_model / n_heads, the head size of configs that do not name one. Throws poslens::Error
/// "<where>: <d_key> 768 is not a multiple of <heads_key> 5" when it does not divide.
int64_t head_size(int64_t d_model, int64_t n_heads, const char* d_key, const char* heads_key,
                  const std::string& where);
/// The sizes every HF decoder config names the same way: hidden_size, num_hidden_layers,
/// num_attention_heads, num_key_value_heads (default: num_attention_heads), head_dim (default:
/// hidden_size / num_attention_heads), intermediate_size, vocab_size, max_position_embeddings
/// (default `default_n_ctx`); with `architecture` set and everything else at its default.
ModelConfig hf_decoder_sizes(const nlohmann::json& j, const std::string& architecture,
                             int64_t default_n_ctx, const std::string& where);

/// Experts stored one tensor per expert, stacked by a `{E}` rule (Mixtral's w1/w3, DeepSeek's
/// gate_proj/up_proj) or fused by transformers 5 (`experts.gate_up_proj`): [n_experts, 2·d_mlp,
/// d_model], each expert's gate rows then its up rows, as LayerWeights::experts_gate_up
/// [n_experts, d_model, 2·d_mlp] with gate and up columns interleaved.
at::Tensor stacked_experts_gate_up(const at::Tensor& stacked);
/// The `text_config` object of a multimodal model's config (Llama 4's and Gemma 4's
/// …ForConditionalGeneration), whose text stack is read as the causal LM's. Throws
/// poslens::Error naming `where` and `arch` when it is missing or not an object.
const nlohmann::json& text_config(const nlohmann::json& j, const std::string& arch, const std::string& where);

/// The experts' down projections stacked [n_experts, d_model, d_mlp] (x @ Wᵀ), as
/// LayerWeights::experts_down [n_experts, d_mlp, d_model] (x @ W).
at::Tensor stacked_experts_down(const at::Tensor& stacked);

/// One supported architecture (the registry, architectures.cpp): how a config selects it, how
/// its config is read and its weight table. Each arch_*.cpp defines the entries of its family.
struct ArchitectureEntry {
  std::string name;                      ///< HF `architectures[0]`, or "PosLens" / "llama2.c"
  std::vector<std::string> model_types;  ///< HF `model_type`s that select it without `architectures`
  /// Reads config.json object `j` (`name` is this entry's name); null for llama2.c, whose
  /// config comes from its header.
  ModelConfig (*read_config)(const nlohmann::json& j, const std::string& name,
                             const std::string& where);
  /// The weight table; `source` is read only by dialects that detect a name prefix (GPT-2).
  WeightTable (*weight_table)(const ModelConfig& c, const TensorSource& source);
  /// Its model_type selects it whatever `architectures` says (the PosLens format).
  bool model_type_first = false;
  /// For configs with neither `architectures` nor `model_type` (TransformerLens's
  /// HookedTransformerConfig): true when `j` is this entry's kind of config.
  bool (*recognise)(const nlohmann::json& j) = nullptr;
};

std::vector<ArchitectureEntry> llama_family_architectures();  ///< + llama2.c
std::vector<ArchitectureEntry> gpt2_architectures();
std::vector<ArchitectureEntry> gpt_neox_architectures();
std::vector<ArchitectureEntry> phi_architectures();
std::vector<ArchitectureEntry> phi3_architectures();  ///< Phi3ForCausalLM (Phi-3, Phi-3.5, Phi-4-mini)
std::vector<ArchitectureEntry> gemma_architectures();
std::vector<ArchitectureEntry> gemma4_architectures();  ///< Gemma4ForCausalLM, Gemma4ForConditionalGeneration
std::vector<ArchitectureEntry> olmo_architectures();
std::vector<ArchitectureEntry> poslens_architectures();
std::vector<ArchitectureEntry> bloom_architectures();
std::vector<ArchitectureEntry> mpt_architectures();
std::vector<ArchitectureEntry> cohere_architectures();  ///< Cohere2ForCausalLM
std::vector<ArchitectureEntry> gpt_oss_architectures();  ///< GptOssForCausalLM
std::vector<ArchitectureEntry> llama4_architectures();  ///< Llama4ForCausalLM, Llama4ForConditionalGeneration
std::vector<ArchitectureEntry> deepseek_architectures();  ///< DeepseekV2ForCausalLM, DeepseekV3ForCausalLM
std::vector<ArchitectureEntry> bert_architectures();  ///< + RoBERTa
std::vector<ArchitectureEntry> modernbert_architectures();  ///< ModernBertForMaskedLM
std::vector<ArchitectureEntry> nanogpt_architectures();
std::vector<ArchitectureEntry> transformer_lens_architectures();
std::vector<ArchitectureEntry> t5_architectures();  ///< + mT5

ModelConfig llama_config_from_hf(const nlohmann::json& j, const std::string& arch,
                                 const std::string& where);
ModelConfig gpt2_config_from_hf(const nlohmann::json& j, const std::string& where);
ModelConfig gpt_neox_config_from_hf(const nlohmann::json& j, const std::string& where);
ModelConfig phi_config_from_hf(const nlohmann::json& j, const std::string& where);
ModelConfig gemma_config_from_hf(const nlohmann::json& j, const std::string& where);
ModelConfig gemma2_config_from_hf(const nlohmann::json& j, const std::string& where);
ModelConfig gemma3_config_from_hf(const nlohmann::json& j, const std::string& where);
ModelConfig olmo_config_from_hf(const nlohmann::json& j, const std::string& where);

/// The PosLens format (docs/poslens-format.md): config and weight table; the components'
/// parameters are checked when the config is read.
ModelConfig poslens_config(const nlohmann::json& j, const std::string& where);
WeightTable poslens_table(const ModelConfig& c);

WeightTable llama2c_table(const ModelConfig& c);
/// The rules of LlamaForCausalLM's names every Llama-style decoder shares: the embedding, the
/// attention's norm and q/k/v/o (biases from qkv_bias / attn_out_bias), the MLP's norm, the
/// final norm and lm_head (optional when tied). The MLP and q/k-norm rules are each family's.
std::vector<WeightRule> llama_decoder_rules(const ModelConfig& c);
WeightTable llama_hf_table(const ModelConfig& c);  ///< also GemmaForCausalLM
WeightTable gpt2_hf_table(const ModelConfig& c, const std::string& prefix);
WeightTable gpt_neox_hf_table(const ModelConfig& c);
WeightTable phi_hf_table(const ModelConfig& c);
WeightTable olmo_hf_table(const ModelConfig& c);
WeightTable gemma_sandwich_hf_table(const ModelConfig& c);  ///< Gemma 2 and 3

}  // namespace poslens::arch
