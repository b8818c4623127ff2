// OpenAI's gpt-oss (HF GptOssForCausalLM, modeling_gpt_oss of transformers 5.17; OpenAI 2025,
// "gpt-oss-120b & gpt-oss-20b Model Card", arXiv 2508.10925 §2.1):
//  - layer_types (before them, odd layers full): sliding_attention layers see keys with
//    i − j < sliding_window (128), full_attention layers every earlier key; both rotate;
//  - a learned sink logit per head in every softmax (`self_attn.sinks`,
//    ModelConfig::attention_sinks): p_ij = exp(s_ij) / (exp(sink_h) + Σ_j exp(s_ij));
//  - RoPE with halves (rotate_half) and YaRN by rope_parameters / rope_scaling (the config's
//    default: factor 32 over 4096 positions, beta_fast 32, beta_slow 1, truncate false),
//    whose attention factor scales cos and sin;
//  - q/k/v/o biases, RMSNorm pre-norm blocks;
//  - a mixture of experts MLP (GptOssMLP, MlpType::MoE): router with bias, top
//    num_experts_per_tok experts weighted by the softmax of their logits, each expert
//    down((clamp(up, ±7) + 1) · g·σ(1.702·g)), g = min(gate, 7), gate and up interleaved in one
//    [d_model, 2·d_mlp] matrix stored as x @ W.
// The Hub's original checkpoints hold the experts MXFP4-quantised (`*_blocks`, `*_scales`):
// loading presents them dequantised (core/formats/mxfp4.h), so this table reads both those and
// the bf16/float32 layout HF writes (save_pretrained of a dequantised model).
#include "core/models/hf_config.h"
#include "core/formats/tensor_source.h"
#include "core/base/error.h"

namespace poslens::arch {

ModelConfig gpt_oss_config_from_hf(const nlohmann::json& j, const std::string& where) {
  ModelConfig c = hf_decoder_sizes(j, "GptOssForCausalLM", 131072, where);
  c.norm = NormType::RMSNorm;
  c.norm_eps = number_or(j, "rms_norm_eps", 1e-5, where);
  c.norm_gain_in_float32 = true;  // GptOssRMSNorm: (w · normed) in float32, then cast
  c.mlp = MlpType::MoE;
  c.activation = Activation::SiLU;  // the experts' clamped SwiGLU (ModelConfig::swiglu_limit)
  c.n_experts = int_or(j, "num_local_experts", 128, where);
  c.n_experts_per_token = int_or(j, "num_experts_per_tok", int_or(j, "experts_per_token", 4, where), where);
  c.expert_activation = ExpertActivation::ClampedSwiGLU;
  c.swiglu_limit = number_or(j, "swiglu_limit", 7.0, where);
  c.qkv_bias = c.attn_out_bias = bool_or(j, "attention_bias", true, where);
  c.attention_sinks = true;
  c.tie_word_embeddings = bool_or(j, "tie_word_embeddings", false, where);
  c.bos_token_id = optional_token_id(j, "bos_token_id");

  nlohmann::json rope_json = j;
  if (!j.contains("rope_scaling") && !j.contains("rope_parameters"))  // GptOssConfig's default
    rope_json["rope_parameters"] = {{"rope_type", "yarn"},    {"factor", 32.0},
                                    {"beta_fast", 32.0},      {"beta_slow", 1.0},
                                    {"truncate", false},      {"original_max_position_embeddings", 4096}};
  const auto rope = rope_component(rope_json, hf_rope_theta(j, 150000.0, where), RopePairing::HalfSplit, c.d_head);
  c.pe_components = {rope};
  const int64_t window = int_or(j, "sliding_window", 128, where);
  for (const bool sliding : hf_sliding_layers(j, c.n_layers, 2, where))
    c.layer_schemes.push_back({sliding ? window : 0, {rope}});
  return c;
}

/// The experts' gate_up_proj / down_proj as bf16 files store them, or as OpenAI's MXFP4 files do
/// (`_blocks` + `_scales`), which the source passed here already presents dequantised
/// (core/formats/mxfp4.h, checkpoint loading).
WeightTable gpt_oss_hf_table(const ModelConfig& c, const TensorSource&) {
  const int64_t q = c.n_heads * c.d_head, kv = c.n_kv_heads * c.d_head, E = c.n_experts;
  const std::string p = "model.layers.{L}.";
  WeightTable t;
  t.rules = {
      {"model.embed_tokens.weight", {c.vocab_size, c.d_model}, {}, &ModelWeights::tok_embed},
      {p + "input_layernorm.weight", {c.d_model}, {&LayerWeights::attn_norm}},
      {p + "self_attn.q_proj.weight", {q, c.d_model}, {&LayerWeights::w_q}},
      {p + "self_attn.q_proj.bias", {q}, {&LayerWeights::b_q}},
      {p + "self_attn.k_proj.weight", {kv, c.d_model}, {&LayerWeights::w_k}},
      {p + "self_attn.k_proj.bias", {kv}, {&LayerWeights::b_k}},
      {p + "self_attn.v_proj.weight", {kv, c.d_model}, {&LayerWeights::w_v}},
      {p + "self_attn.v_proj.bias", {kv}, {&LayerWeights::b_v}},
      {p + "self_attn.o_proj.weight", {c.d_model, q}, {&LayerWeights::w_o}},
      {p + "self_attn.o_proj.bias", {c.d_model}, {&LayerWeights::b_o}},
      {p + "self_attn.sinks", {c.n_heads}, {&LayerWeights::attn_sinks}},
      {p + "post_attention_layernorm.weight", {c.d_model}, {&LayerWeights::mlp_norm}},
      {p + "mlp.router.weight", {E, c.d_model}, {&LayerWeights::router}},
      {p + "mlp.router.bias", {E}, {&LayerWeights::router_bias}},
      {p + "mlp.experts.gate_up_proj", {E, c.d_model, 2 * c.d_mlp}, {&LayerWeights::experts_gate_up}},
      {p + "mlp.experts.gate_up_proj_bias", {E, 2 * c.d_mlp}, {&LayerWeights::experts_gate_up_bias}},
      {p + "mlp.experts.down_proj", {E, c.d_mlp, c.d_model}, {&LayerWeights::experts_down}},
      {p + "mlp.experts.down_proj_bias", {E, c.d_model}, {&LayerWeights::experts_down_bias}},
      {"model.norm.weight", {c.d_model}, {}, &ModelWeights::final_norm},
  };
  WeightRule lm_head{"lm_head.weight", {c.vocab_size, c.d_model}, {}, &ModelWeights::unembed};
  lm_head.optional = c.tie_word_embeddings;
  t.rules.push_back(lm_head);
  return t;
}

std::vector<ArchitectureEntry> gpt_oss_architectures() {
  return {{"GptOssForCausalLM", {"gpt_oss"},
           [](const nlohmann::json& j, const std::string&, const std::string& where) {
             return gpt_oss_config_from_hf(j, where);
           },
           gpt_oss_hf_table}};
}

}  // namespace poslens::arch
