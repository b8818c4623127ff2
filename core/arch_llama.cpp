// The Llama block family: llama2.c .bin files (Meta naming) and HF LlamaForCausalLM,
// MistralForCausalLM (sliding window) and Qwen2ForCausalLM (q/k/v biases).
// Block: x += o(attn(rmsnorm(x))); x += down(silu(gate(h)) * up(h)), h = rmsnorm(x).
#include "core/arch_common.h"
#include "core/error.h"

namespace poslens::arch {

int64_t optional_token_id(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return (it != j.end() && it->is_number_integer()) ? it->get<int64_t>() : -1;
}

RopeScaling rope_scaling_from_hf(const nlohmann::json& j, const ModelConfig& c,
                                 const std::string& where) {
  RopeScaling s;
  const auto it = j.find("rope_scaling");
  if (it == j.end() || it->is_null()) return s;
  if (!it->is_object()) throw Error(where + ": \"rope_scaling\" must be an object");
  const auto& r = *it;
  s.type = r.value("rope_type", r.value("type", std::string("default")));
  s.factor = number_or(r, "factor", 1.0, where);
  s.max_position_embeddings = c.n_ctx;
  s.original_max_position_embeddings = int_or(r, "original_max_position_embeddings", 0, where);
  s.beta_fast = number_or(r, "beta_fast", s.beta_fast, where);
  s.beta_slow = number_or(r, "beta_slow", s.beta_slow, where);
  s.low_freq_factor = number_or(r, "low_freq_factor", s.low_freq_factor, where);
  s.high_freq_factor = number_or(r, "high_freq_factor", s.high_freq_factor, where);
  s.truncate = bool_or(r, "truncate", s.truncate, where);
  for (const auto& [key, field] : {std::pair{"attention_factor", &s.attention_factor},
                                   std::pair{"mscale", &s.mscale},
                                   std::pair{"mscale_all_dim", &s.mscale_all_dim}})
    if (r.contains(key) && !r[key].is_null()) *field = number_or(r, key, 0.0, where);
  for (const auto& [key, field] : {std::pair{"short_factor", &s.short_factor},
                                   std::pair{"long_factor", &s.long_factor}})
    if (r.contains(key) && r[key].is_array())
      for (const auto& v : r[key]) {
        if (!v.is_number()) throw Error(where + ": rope_scaling." + key + " must hold numbers");
        field->push_back(v.get<double>());
      }
  try {
    rope_frequencies_scaled(c.rope_theta, c.rotary_dim, s);
  } catch (const Error& e) {
    throw Error(where + ": rope_scaling: " + e.what());
  }
  return s;
}

ModelConfig llama_config_from_hf(const nlohmann::json& j, const std::string& arch,
                                 const std::string& where) {
  ModelConfig c = hf_decoder_sizes(j, arch, 2048, where);
  c.norm = NormType::RMSNorm;
  c.norm_eps = number_or(j, "rms_norm_eps", 1e-6, where);
  c.mlp = MlpType::Gated;
  const std::string act = j.value("hidden_act", std::string("silu"));
  if (act != "silu" && act != "swish")
    throw Error(where + ": hidden_act \"" + act + "\" is not supported for " + arch +
                " (supported: silu)");
  c.activation = Activation::SiLU;
  c.position = PositionKind::Rotary;
  c.rope_theta = number_or(j, "rope_theta", 10000.0, where);
  c.rope_pairing = RopePairing::HalfSplit;  // HF rotate_half
  c.rotary_dim = c.d_head;
  c.rope_scaling = rope_scaling_from_hf(j, c, where);
  c.tie_word_embeddings = bool_or(j, "tie_word_embeddings", false, where);
  c.qkv_bias = bool_or(j, "attention_bias", false, where);
  c.attn_out_bias = c.qkv_bias;
  c.mlp_bias = bool_or(j, "mlp_bias", false, where);
  if (arch == "Qwen2ForCausalLM") {
    c.qkv_bias = true;  // Qwen2 always has q/k/v biases and none on o_proj
    c.attn_out_bias = false;
    if (bool_or(j, "use_sliding_window", false, where))
      throw Error(where + ": Qwen2 use_sliding_window=true is not supported yet");
  }
  if (arch == "MistralForCausalLM") c.sliding_window = int_or(j, "sliding_window", 0, where);
  c.bos_token_id = optional_token_id(j, "bos_token_id");
  return c;
}

WeightTable llama_hf_table(const ModelConfig& c) {
  const int64_t q = c.n_heads * c.d_head, kv = c.n_kv_heads * c.d_head;
  const std::string p = "model.layers.{L}.";
  WeightTable t;
  t.rules = {
      {"model.embed_tokens.weight", {c.vocab_size, c.d_model}, {}, &ModelWeights::tok_embed},
      {p + "input_layernorm.weight", {c.d_model}, {&LayerWeights::attn_norm}},
      {p + "self_attn.q_proj.weight", {q, c.d_model}, {&LayerWeights::w_q}},
      {p + "self_attn.k_proj.weight", {kv, c.d_model}, {&LayerWeights::w_k}},
      {p + "self_attn.v_proj.weight", {kv, c.d_model}, {&LayerWeights::w_v}},
      {p + "self_attn.o_proj.weight", {c.d_model, q}, {&LayerWeights::w_o}},
      {p + "post_attention_layernorm.weight", {c.d_model}, {&LayerWeights::mlp_norm}},
      {p + "mlp.gate_proj.weight", {c.d_mlp, c.d_model}, {&LayerWeights::w_gate}},
      {p + "mlp.up_proj.weight", {c.d_mlp, c.d_model}, {&LayerWeights::w_up}},
      {p + "mlp.down_proj.weight", {c.d_model, c.d_mlp}, {&LayerWeights::w_down}},
      {"model.norm.weight", {c.d_model}, {}, &ModelWeights::final_norm},
  };
  WeightRule lm_head{"lm_head.weight", {c.vocab_size, c.d_model}, {}, &ModelWeights::unembed};
  lm_head.optional = c.tie_word_embeddings;
  t.rules.push_back(lm_head);
  if (c.qkv_bias) {
    t.rules.push_back({p + "self_attn.q_proj.bias", {q}, {&LayerWeights::b_q}});
    t.rules.push_back({p + "self_attn.k_proj.bias", {kv}, {&LayerWeights::b_k}});
    t.rules.push_back({p + "self_attn.v_proj.bias", {kv}, {&LayerWeights::b_v}});
  }
  if (c.attn_out_bias)
    t.rules.push_back({p + "self_attn.o_proj.bias", {c.d_model}, {&LayerWeights::b_o}});
  if (c.mlp_bias) {
    t.rules.push_back({p + "mlp.gate_proj.bias", {c.d_mlp}, {&LayerWeights::b_gate}});
    t.rules.push_back({p + "mlp.up_proj.bias", {c.d_mlp}, {&LayerWeights::b_up}});
    t.rules.push_back({p + "mlp.down_proj.bias", {c.d_model}, {&LayerWeights::b_down}});
  }
  t.ignored = {p + "self_attn.rotary_emb.inv_freq"};
  return t;
}

WeightTable llama2c_table(const ModelConfig& c) {
  const int64_t kv = c.n_kv_heads * c.d_head;
  const std::string p = "layers.{L}.";
  WeightTable t;
  t.rules = {
      {"tok_embeddings.weight", {c.vocab_size, c.d_model}, {}, &ModelWeights::tok_embed},
      {p + "attention_norm.weight", {c.d_model}, {&LayerWeights::attn_norm}},
      {p + "attention.wq.weight", {c.d_model, c.d_model}, {&LayerWeights::w_q}},
      {p + "attention.wk.weight", {kv, c.d_model}, {&LayerWeights::w_k}},
      {p + "attention.wv.weight", {kv, c.d_model}, {&LayerWeights::w_v}},
      {p + "attention.wo.weight", {c.d_model, c.d_model}, {&LayerWeights::w_o}},
      {p + "ffn_norm.weight", {c.d_model}, {&LayerWeights::mlp_norm}},
      {p + "feed_forward.w1.weight", {c.d_mlp, c.d_model}, {&LayerWeights::w_gate}},
      {p + "feed_forward.w2.weight", {c.d_model, c.d_mlp}, {&LayerWeights::w_down}},
      {p + "feed_forward.w3.weight", {c.d_mlp, c.d_model}, {&LayerWeights::w_up}},
      {"norm.weight", {c.d_model}, {}, &ModelWeights::final_norm},
  };
  WeightRule output{"output.weight", {c.vocab_size, c.d_model}, {}, &ModelWeights::unembed};
  output.optional = c.tie_word_embeddings;
  t.rules.push_back(output);
  return t;
}

}  // namespace poslens::arch
