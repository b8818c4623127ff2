// The Llama block family: llama2.c .bin files (Meta naming) and HF LlamaForCausalLM,
// MistralForCausalLM (sliding window), Qwen2ForCausalLM (q/k/v biases) and Qwen3ForCausalLM
// (modeling_qwen3: RMSNorm of q and k per head, `q_norm`/`k_norm` of head_dim, before RoPE; both
// Qwens: sliding-window layers from `layer_types`, or from `max_window_layers` on, with use_sliding_window),
// SmolLM3ForCausalLM (modeling_smollm3: Llama's block with RoPE dropped on the layers whose
// `no_rope_layers` entry is 0 — by default every `no_rope_layer_interval`-th (4th) layer),
// MixtralForCausalLM (modeling_mixtral; Jiang et al. 2024, arXiv 2401.04088: Mistral's block whose
// MLP is a sparse mixture of experts — router `block_sparse_moe.gate` without bias, the top
// `num_experts_per_tok` of `num_local_experts` weighted by their renormalised softmax, each expert
// a gated SiLU MLP w2(silu(w1 x) * w3 x) stored one tensor per expert as on the Hub).
// Block: x += o(attn(rmsnorm(x))); x += down(silu(gate(h)) * up(h)), h = rmsnorm(x).
#include <algorithm>

#include "core/models/hf_config.h"
#include "core/formats/llama2c.h"
#include "core/base/error.h"

namespace poslens::arch {

std::vector<bool> hf_rope_layers(const nlohmann::json& j, int64_t n_layers, const std::string& where) {
  std::vector<bool> rotates;
  if (const auto n = j.find("no_rope_layers"); n != j.end() && n->is_array()) {
    for (const auto& v : *n) {
      if (!v.is_number_integer()) throw Error(where + ": no_rope_layers must hold 0 or 1 per layer");
      rotates.push_back(v.get<int64_t>() != 0);
    }
  } else {
    const int64_t interval = int_or(j, "no_rope_layer_interval", 4, where);
    if (interval <= 0) throw Error(where + ": no_rope_layer_interval must be positive");
    for (int64_t l = 0; l < n_layers; ++l) rotates.push_back((l + 1) % interval != 0);
  }
  if (static_cast<int64_t>(rotates.size()) != n_layers)
    throw Error(where + ": no_rope_layers has " + std::to_string(rotates.size()) + " entries for " +
                std::to_string(n_layers) + " layers");
  return rotates;
}

namespace {

/// Qwen2's and Qwen3's per-layer windows, as Qwen2Config / Qwen3Config (transformers >= 4.53)
/// derive them: with use_sliding_window, the layers `layer_types` calls "sliding_attention" — or,
/// without layer_types (older configs), the layers from `max_window_layers` (default 28) on — see
/// the last `sliding_window` keys; without it every layer sees every key. Empty when no layer
/// slides. Throws poslens::Error when layer_types lists sliding layers that would get no window
/// (use_sliding_window false or sliding_window not positive: transformers silently runs them with
/// full attention, which the config's author can hardly have meant).
std::vector<LayerScheme> qwen_sliding_layers(const nlohmann::json& j, const ModelConfig& c, const std::string& arch,
                                             const std::string& where) {
  const std::string family = arch == "Qwen3ForCausalLM" ? "Qwen3" : "Qwen2";
  const bool use = bool_or(j, "use_sliding_window", false, where);
  std::vector<bool> sliding;
  if (const auto t = j.find("layer_types"); t != j.end() && t->is_array()) {
    sliding = hf_sliding_layers(j, c.n_layers, 1, where);
  } else if (use) {
    const int64_t first = int_or(j, "max_window_layers", 28, where);
    for (int64_t l = 0; l < c.n_layers; ++l) sliding.push_back(l >= first);
  }
  if (std::find(sliding.begin(), sliding.end(), true) == sliding.end()) return {};
  if (!use)
    throw Error(where + ": " + family + " layer_types lists sliding_attention layers but use_sliding_window "
                "is false (transformers would run them with full attention); set use_sliding_window or "
                "make them full_attention");
  const int64_t window = int_or(j, "sliding_window", 0, where);
  if (window <= 0) throw Error(where + ": " + family + " sliding_attention layers need a positive sliding_window");
  std::vector<LayerScheme> schemes;
  for (const bool s : sliding) schemes.push_back({s ? window : 0, c.pe_components});
  return schemes;
}

}  // namespace

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
  const double default_theta = arch == "SmolLM3ForCausalLM"    ? 2e6  // HF configs' defaults
                               : arch == "MixtralForCausalLM" ? 1e6
                                                              : 10000.0;
  c.pe_components = {rope_component(j, hf_rope_theta(j, default_theta, where),
                                    RopePairing::HalfSplit /* HF rotate_half */, c.d_head)};
  c.tie_word_embeddings = bool_or(j, "tie_word_embeddings", false, where);
  c.qkv_bias = bool_or(j, "attention_bias", false, where);
  c.attn_out_bias = c.qkv_bias;
  c.mlp_bias = bool_or(j, "mlp_bias", false, where);
  if (arch == "Qwen2ForCausalLM") {
    c.qkv_bias = true;  // Qwen2 always has q/k/v biases and none on o_proj
    c.attn_out_bias = false;
  }
  if (arch == "Qwen3ForCausalLM") c.qk_norm = QkNorm::PerHead;
  if (arch == "Qwen2ForCausalLM" || arch == "Qwen3ForCausalLM") c.layer_schemes = qwen_sliding_layers(j, c, arch, where);
  if (arch == "SmolLM3ForCausalLM") {
    c.tie_word_embeddings = bool_or(j, "tie_word_embeddings", true, where);
    if (bool_or(j, "use_sliding_window", false, where))
      throw Error(where + ": SmolLM3 use_sliding_window=true is not supported yet");
    for (const bool rotates : hf_rope_layers(j, c.n_layers, where))
      c.layer_schemes.push_back({0, rotates ? c.pe_components : std::vector<PositionComponentSpec>{}});
  }
  if (arch == "MistralForCausalLM" || arch == "MixtralForCausalLM") c.sliding_window = int_or(j, "sliding_window", 0, where);
  if (arch == "MixtralForCausalLM") {
    c.mlp = MlpType::MoE;
    c.expert_activation = ExpertActivation::Gated;
    c.n_experts = int_or(j, "num_local_experts", 8, where);
    c.n_experts_per_token = int_or(j, "num_experts_per_tok", 2, where);
  }
  c.bos_token_id = optional_token_id(j, "bos_token_id");
  return c;
}

std::vector<WeightRule> llama_decoder_rules(const ModelConfig& c) {
  const int64_t q = c.n_heads * c.d_head, kv = c.n_kv_heads * c.d_head;
  const std::string p = "model.layers.{L}.";
  std::vector<WeightRule> rules = {
      {"model.embed_tokens.weight", {c.vocab_size, c.d_model}, {}, &ModelWeights::tok_embed},
      {p + "input_layernorm.weight", {c.d_model}, {&LayerWeights::attn_norm}},
      {p + "self_attn.q_proj.weight", {q, c.d_model}, {&LayerWeights::w_q}},
      {p + "self_attn.k_proj.weight", {kv, c.d_model}, {&LayerWeights::w_k}},
      {p + "self_attn.v_proj.weight", {kv, c.d_model}, {&LayerWeights::w_v}},
      {p + "self_attn.o_proj.weight", {c.d_model, q}, {&LayerWeights::w_o}},
      {p + "post_attention_layernorm.weight", {c.d_model}, {&LayerWeights::mlp_norm}},
      {"model.norm.weight", {c.d_model}, {}, &ModelWeights::final_norm},
  };
  WeightRule lm_head{"lm_head.weight", {c.vocab_size, c.d_model}, {}, &ModelWeights::unembed};
  lm_head.optional = c.tie_word_embeddings;
  rules.push_back(lm_head);
  if (c.qkv_bias) {
    rules.push_back({p + "self_attn.q_proj.bias", {q}, {&LayerWeights::b_q}});
    rules.push_back({p + "self_attn.k_proj.bias", {kv}, {&LayerWeights::b_k}});
    rules.push_back({p + "self_attn.v_proj.bias", {kv}, {&LayerWeights::b_v}});
  }
  if (c.attn_out_bias) rules.push_back({p + "self_attn.o_proj.bias", {c.d_model}, {&LayerWeights::b_o}});
  return rules;
}

WeightTable llama_hf_table(const ModelConfig& c) {
  const std::string p = "model.layers.{L}.";
  WeightTable t;
  t.rules = llama_decoder_rules(c);
  if (c.mlp == MlpType::MoE) {
    WeightRule gate_up{p + "block_sparse_moe.experts.{E}.{w1,w3}.weight", {c.d_mlp, c.d_model}, {&LayerWeights::experts_gate_up}};
    gate_up.to_runtime = stacked_experts_gate_up;
    WeightRule down{p + "block_sparse_moe.experts.{E}.w2.weight", {c.d_model, c.d_mlp}, {&LayerWeights::experts_down}};
    down.to_runtime = stacked_experts_down;
    t.rules.push_back(gate_up);
    t.rules.push_back(down);
    t.rules.push_back({p + "block_sparse_moe.gate.weight", {c.n_experts, c.d_model}, {&LayerWeights::router}});
  } else {
    t.rules.push_back({p + "mlp.gate_proj.weight", {c.d_mlp, c.d_model}, {&LayerWeights::w_gate}});
    t.rules.push_back({p + "mlp.up_proj.weight", {c.d_mlp, c.d_model}, {&LayerWeights::w_up}});
    t.rules.push_back({p + "mlp.down_proj.weight", {c.d_model, c.d_mlp}, {&LayerWeights::w_down}});
  }
  if (c.mlp_bias) {
    t.rules.push_back({p + "mlp.gate_proj.bias", {c.d_mlp}, {&LayerWeights::b_gate}});
    t.rules.push_back({p + "mlp.up_proj.bias", {c.d_mlp}, {&LayerWeights::b_up}});
    t.rules.push_back({p + "mlp.down_proj.bias", {c.d_model}, {&LayerWeights::b_down}});
  }
  if (c.qk_norm == QkNorm::PerHead) {
    t.rules.push_back({p + "self_attn.q_norm.weight", {c.d_head}, {&LayerWeights::q_norm}});
    t.rules.push_back({p + "self_attn.k_norm.weight", {c.d_head}, {&LayerWeights::k_norm}});
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

std::vector<ArchitectureEntry> llama_family_architectures() {
  const auto read = [](const nlohmann::json& j, const std::string& name, const std::string& where) {
    return llama_config_from_hf(j, name, where);
  };
  const auto table = [](const ModelConfig& c, const TensorSource&) { return llama_hf_table(c); };
  return {{"LlamaForCausalLM", {"llama"}, read, table},
          {"MistralForCausalLM", {"mistral"}, read, table},
          {"MixtralForCausalLM", {"mixtral"}, read, table},
          {"Qwen2ForCausalLM", {"qwen2"}, read, table},
          {"Qwen3ForCausalLM", {"qwen3"}, read, table},
          {"SmolLM3ForCausalLM", {"smollm3"}, read, table},
          {"llama2.c", {}, nullptr,
           [](const ModelConfig& c, const TensorSource&) { return llama2c_table(c); }}};
}

}  // namespace poslens::arch

namespace poslens {

ModelConfig llama2c_config(const Llama2cHeader& h) {
  ModelConfig c;
  c.format = "llama2.c";
  c.architecture = "llama2.c";
  c.d_model = h.dim;
  c.n_layers = h.n_layers;
  c.n_heads = h.n_heads;
  c.n_kv_heads = h.n_kv_heads;
  c.d_head = h.dim / h.n_heads;
  c.d_mlp = h.hidden_dim;
  c.vocab_size = h.vocab_size;
  c.n_ctx = h.seq_len;
  c.norm = NormType::RMSNorm;
  c.norm_eps = 1e-5;
  c.mlp = MlpType::Gated;
  c.activation = Activation::SiLU;
  // run.c: RoPE with interleaved pairs, theta 10000.
  c.pe_components = {{"rope", R"({"type": "rope", "rope_theta": 10000, "pairing": "interleaved"})"}};
  c.tie_word_embeddings = h.shared_classifier;
  c.causal = true;
  c.bos_token_id = 1;
  return c;
}

}  // namespace poslens
