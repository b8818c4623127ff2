// OLMo (HF OlmoForCausalLM, modeling_olmo): the Llama layout and block (SwiGLU, half-split
// RoPE, GQA) with non-parametric LayerNorm: F.layer_norm(x, no weight, no bias, eps=1e-5) in
// float32. The file holds no norm tensors, so the table is Llama's without them and the norm
// weights stay undefined (the runtime then normalises without scaling).
// OLMo 2 (HF Olmo2ForCausalLM, modeling_olmo2): the Llama layout with RMSNorm on the sublayers'
// outputs and none on their inputs (x += norm(attn(x)); x += norm(mlp(x)):
// NormPlacement::SublayerOutput; `post_attention_layernorm` / `post_feedforward_layernorm` are
// the two norms) and RMSNorm of q and k over the whole projection before RoPE
// (`q_norm` [n_heads·d_head], `k_norm` [n_kv_heads·d_head]: QkNorm::Whole).
#include <algorithm>

#include "core/models/hf_config.h"
#include "core/base/error.h"

namespace poslens::arch {

ModelConfig olmo_config_from_hf(const nlohmann::json& j, const std::string& where) {
  const auto clip = j.find("clip_qkv");
  if (clip != j.end() && !clip->is_null())
    throw Error(where + ": OLMo \"clip_qkv\" (clamping q, k, v) is not supported");
  ModelConfig c = llama_config_from_hf(j, "OlmoForCausalLM", where);
  c.norm = NormType::LayerNorm;
  c.norm_eps = 1e-5;  // OlmoLayerNorm's fixed eps
  return c;
}

WeightTable olmo_hf_table(const ModelConfig& c) {
  WeightTable t = llama_hf_table(c);
  const auto is_norm = [](const WeightRule& r) {
    return r.model_target == &ModelWeights::final_norm ||
           (!r.layer_targets.empty() && (r.layer_targets[0] == &LayerWeights::attn_norm ||
                                         r.layer_targets[0] == &LayerWeights::mlp_norm));
  };
  t.rules.erase(std::remove_if(t.rules.begin(), t.rules.end(), is_norm), t.rules.end());
  return t;
}

ModelConfig olmo2_config_from_hf(const nlohmann::json& j, const std::string& where) {
  ModelConfig c = llama_config_from_hf(j, "Olmo2ForCausalLM", where);
  c.norm_placement = NormPlacement::SublayerOutput;
  c.qk_norm = QkNorm::Whole;
  c.norm_gain_in_float32 = true;  // Olmo2RMSNorm: (w · normed) in float32, then cast
  return c;
}

WeightTable olmo2_hf_table(const ModelConfig& c) {
  WeightTable t = llama_hf_table(c);
  const std::string p = "model.layers.{L}.";
  for (auto& r : t.rules) {  // Llama's two pre-norms become the sublayers' output norms
    if (r.pattern == p + "input_layernorm.weight") r.pattern = p + "post_attention_layernorm.weight";
    else if (r.pattern == p + "post_attention_layernorm.weight") r.pattern = p + "post_feedforward_layernorm.weight";
  }
  t.rules.push_back({p + "self_attn.q_norm.weight", {c.n_heads * c.d_head}, {&LayerWeights::q_norm}});
  t.rules.push_back({p + "self_attn.k_norm.weight", {c.n_kv_heads * c.d_head}, {&LayerWeights::k_norm}});
  return t;
}

std::vector<ArchitectureEntry> olmo_architectures() {
  return {{"OlmoForCausalLM", {"olmo"},
           [](const nlohmann::json& j, const std::string&, const std::string& where) {
             return olmo_config_from_hf(j, where);
           },
           [](const ModelConfig& c, const TensorSource&) { return olmo_hf_table(c); }},
          {"Olmo2ForCausalLM", {"olmo2"},
           [](const nlohmann::json& j, const std::string&, const std::string& where) {
             return olmo2_config_from_hf(j, where);
           },
           [](const ModelConfig& c, const TensorSource&) { return olmo2_hf_table(c); }}};
}

}  // namespace poslens::arch
