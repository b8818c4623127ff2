// Gemma 1 (HF GemmaForCausalLM, modeling_gemma): the Llama layout and block with
//  - token embeddings multiplied by sqrt(hidden_size) (embed_scale),
//  - RMSNorm scaling by (1 + w) in float32 (the file stores w - 1: norm_weight_offset 1),
//  - a GeGLU MLP down(gelu_tanh(gate(h)) * up(h)),
//  - head_dim from the config (it need not be hidden_size / num_attention_heads),
//  - tied embeddings by default (no lm_head.weight).
// The tensors are named exactly as Llama's, so the weight table is llama_hf_table.
//
// Gemma 3 text (HF Gemma3ForCausalLM, modeling_gemma3 of transformers 5.17) adds per-layer
// schemes: `layer_types` (or, in configs written before them, every `sliding_window_pattern`-th
// layer global) pick local layers — keys with i − j < sliding_window, RoPE base
// rope_parameters.sliding_attention.rope_theta (`rope_local_base_freq`, 10000) — and global
// layers — every key, rope_parameters.full_attention (`rope_theta` 1e6 and its scaling, e.g.
// linear ×8 on the 4B–27B models). Also q/k RMSNorm per head (1 + w), sandwich norms
// (post_attention / pre_feedforward / post_feedforward_layernorm) and the softmax scale
// query_pre_attn_scalar^-1/2. Bidirectional attention (EmbeddingGemma) is refused.
//
// Gemma 2 (HF Gemma2ForCausalLM, modeling_gemma2): the same sandwich block without q/k norm;
// local and global layers alternate (layer_types; before it, layer 0 local) with one RoPE base;
// attention logits soft-capped at attn_logit_softcapping (50) and the output logits at
// final_logit_softcapping (30): c·tanh(x/c) (Gemma 3 applies them too when its config sets them).
#include <cmath>

#include "core/models/hf_config.h"
#include "core/base/error.h"

namespace poslens::arch {

ModelConfig gemma_config_from_hf(const nlohmann::json& j, const std::string& where) {
  require_int(j, "head_dim", where);  // Gemma's head_dim need not be hidden_size / heads
  ModelConfig c = hf_decoder_sizes(j, "GemmaForCausalLM", 8192, where);
  c.norm = NormType::RMSNorm;
  c.norm_eps = number_or(j, "rms_norm_eps", 1e-6, where);
  c.norm_weight_offset = 1.0;
  c.embed_scale = std::sqrt(static_cast<double>(c.d_model));
  c.mlp = MlpType::Gated;
  // HF GemmaMLP uses `hidden_activation` and, when it is null, gelu_pytorch_tanh whatever
  // `hidden_act` says (the first Gemma configs said "gelu" there; transformers PR 29402).
  const auto it = j.find("hidden_activation");
  const std::string act = (it != j.end() && it->is_string()) ? it->get<std::string>()
                                                               : std::string("gelu_pytorch_tanh");
  c.activation = gelu_from_hf(act, "hidden_activation", c.architecture, where);

  c.pe_components = {rope_component(j, hf_rope_theta(j, 10000.0, where),
                                    RopePairing::HalfSplit /* HF rotate_half */, c.d_head)};

  c.qkv_bias = c.attn_out_bias = bool_or(j, "attention_bias", false, where);
  c.mlp_bias = false;
  c.tie_word_embeddings = bool_or(j, "tie_word_embeddings", true, where);
  c.bos_token_id = optional_token_id(j, "bos_token_id");  // Gemma expects <bos> first
  return c;
}

namespace {

/// The "rope" component of one of Gemma 3's layer types: rope_parameters.<type>, or in older
/// configs rope_theta + rope_scaling for global layers and rope_local_base_freq for local ones.
PositionComponentSpec gemma3_rope(const nlohmann::json& j, const std::string& type, int64_t d_head,
                                  const std::string& where) {
  const bool global = type == "full_attention";
  nlohmann::json older{{"rope_type", "default"}};
  if (global && j.contains("rope_scaling") && j["rope_scaling"].is_object()) older = j["rope_scaling"];
  older["rope_theta"] = global ? number_or(j, "rope_theta", 1e6, where) : number_or(j, "rope_local_base_freq", 1e4, where);
  return layer_type_rope(j, type, older, d_head, where);
}

/// What Gemma 2 and 3 share beyond Gemma 1: sandwich norms, the softmax scale
/// query_pre_attn_scalar^-1/2, and local / global layers from `layer_types` — or, in configs
/// written before it, every `sliding_window_pattern`-th layer global (default
/// `default_pattern`) — each type with its RoPE component.
ModelConfig gemma_local_global(const nlohmann::json& j, const std::string& arch, int64_t default_pattern,
                               const PositionComponentSpec& global, const PositionComponentSpec& local,
                               const std::string& where) {
  ModelConfig c = gemma_config_from_hf(j, where);
  c.architecture = arch;
  if (bool_or(j, "use_bidirectional_attention", false, where))
    throw Error(where + ": use_bidirectional_attention (EmbeddingGemma) is not supported");
  c.norm_placement = NormPlacement::Sandwich;
  c.attn_scale = 1.0 / std::sqrt(number_or(j, "query_pre_attn_scalar", static_cast<double>(c.d_head), where));
  const int64_t window = int_or(j, "sliding_window", 4096, where);
  c.pe_components = {global};
  for (const bool sliding : hf_sliding_layers(j, c.n_layers, default_pattern, where))
    c.layer_schemes.push_back(sliding ? LayerScheme{window, {local}} : LayerScheme{0, {global}});
  c.attn_logit_softcap = number_or(j, "attn_logit_softcapping", 0.0, where);  // null: no cap
  c.final_logit_softcap = number_or(j, "final_logit_softcapping", 0.0, where);
  return c;
}

}  // namespace

ModelConfig gemma2_config_from_hf(const nlohmann::json& j, const std::string& where) {
  // One RoPE base for both layer types (rope_parameters or rope_theta, default 10000).
  const auto rope = rope_component(j, hf_rope_theta(j, 10000.0, where), RopePairing::HalfSplit,
                                   require_int(j, "head_dim", where));
  return gemma_local_global(j, "Gemma2ForCausalLM", 2, rope, rope, where);
}

ModelConfig gemma3_config_from_hf(const nlohmann::json& j, const std::string& where) {
  const int64_t d_head = require_int(j, "head_dim", where);
  ModelConfig c = gemma_local_global(j, "Gemma3ForCausalLM", 6, gemma3_rope(j, "full_attention", d_head, where),
                                     gemma3_rope(j, "sliding_attention", d_head, where), where);
  c.n_ctx = int_or(j, "max_position_embeddings", 131072, where);
  c.qk_norm = QkNorm::PerHead;
  return c;
}

WeightTable gemma_sandwich_hf_table(const ModelConfig& c) {
  WeightTable t = llama_hf_table(c);
  const std::string p = "model.layers.{L}.";
  for (auto& r : t.rules)  // Llama's second pre-norm is Gemma 2/3's post-attention norm
    if (r.pattern == p + "post_attention_layernorm.weight") r.layer_targets = {&LayerWeights::attn_post_norm};
  t.rules.push_back({p + "pre_feedforward_layernorm.weight", {c.d_model}, {&LayerWeights::mlp_norm}});
  t.rules.push_back({p + "post_feedforward_layernorm.weight", {c.d_model}, {&LayerWeights::mlp_post_norm}});
  return t;
}

std::vector<ArchitectureEntry> gemma_architectures() {
  const auto sandwich_table = [](const ModelConfig& c, const TensorSource&) { return gemma_sandwich_hf_table(c); };
  return {{"GemmaForCausalLM", {"gemma"},
           [](const nlohmann::json& j, const std::string&, const std::string& where) {
             return gemma_config_from_hf(j, where);
           },
           [](const ModelConfig& c, const TensorSource&) { return llama_hf_table(c); }},
          {"Gemma2ForCausalLM", {"gemma2"},
           [](const nlohmann::json& j, const std::string&, const std::string& where) {
             return gemma2_config_from_hf(j, where);
           },
           sandwich_table},
          {"Gemma3ForCausalLM", {"gemma3_text"},
           [](const nlohmann::json& j, const std::string&, const std::string& where) {
             return gemma3_config_from_hf(j, where);
           },
           sandwich_table}};
}

}  // namespace poslens::arch
