// GPT-NeoX / Pythia (HF GPTNeoXForCausalLM, modeling_gpt_neox): LayerNorm, partial half-split
// RoPE on the first rotary_pct·d_head dims of each head, GELU MLP, biases, and by default the
// parallel block x + attn(ln1(x)) + mlp(ln2(x)) (use_parallel_residual).
// query_key_value fuses q, k, v PER HEAD: its output rows are [n_heads, 3, d_head] (HF views
// the projection as (..., n_heads, 3·d_head) and splits the last dim), so it is split with
// WeightRule::Split::PerHead, not in three consecutive blocks as GPT-2's c_attn.
#include "core/models/hf_config.h"
#include "core/base/error.h"

namespace poslens::arch {

ModelConfig gpt_neox_config_from_hf(const nlohmann::json& j, const std::string& where) {
  ModelConfig c;
  c.architecture = "GPTNeoXForCausalLM";
  c.d_model = require_int(j, "hidden_size", where);
  c.n_layers = require_int(j, "num_hidden_layers", where);
  c.n_heads = require_int(j, "num_attention_heads", where);
  c.n_kv_heads = c.n_heads;  // no GQA in GPT-NeoX
  c.d_head = head_size(c.d_model, c.n_heads, "hidden_size", "num_attention_heads", where);
  c.d_mlp = require_int(j, "intermediate_size", where);
  c.vocab_size = require_int(j, "vocab_size", where);
  c.n_ctx = int_or(j, "max_position_embeddings", 2048, where);
  c.norm = NormType::LayerNorm;
  c.norm_eps = number_or(j, "layer_norm_eps", 1e-5, where);
  c.mlp = MlpType::Plain;
  c.activation = gelu_from_hf(j.value("hidden_act", std::string("gelu")), "hidden_act",
                              c.architecture, where);

  // Older configs say rotary_pct / rotary_emb_base, newer ones partial_rotary_factor / rope_theta.
  const double pct = number_or(j, "partial_rotary_factor", number_or(j, "rotary_pct", 0.25, where),
                               where);
  if (!(pct > 0 && pct <= 1))
    throw Error(where + ": rotary_pct must be in (0, 1], got " + std::to_string(pct));
  const auto rotary_dim = static_cast<int64_t>(static_cast<double>(c.d_head) * pct);  // HF int()
  const double theta =
      hf_rope_theta(j, number_or(j, "rotary_emb_base", 10000.0, where), where);
  // HF rotate_half over the rotary dims.
  c.pe_components = {rope_component(j, theta, RopePairing::HalfSplit, rotary_dim)};

  c.parallel_residual = bool_or(j, "use_parallel_residual", true, where);
  c.qkv_bias = c.attn_out_bias = bool_or(j, "attention_bias", true, where);
  c.mlp_bias = true;
  c.tie_word_embeddings = bool_or(j, "tie_word_embeddings", false, where);
  c.bos_token_id = -1;  // Pythia text is not prefixed with a BOS token
  return c;
}

WeightTable gpt_neox_hf_table(const ModelConfig& c) {
  const std::string p = "gpt_neox.layers.{L}.";
  const int64_t d = c.d_model;
  WeightRule qkv{p + "attention.query_key_value.weight", {3 * d, d},
                 {&LayerWeights::w_q, &LayerWeights::w_k, &LayerWeights::w_v}};
  qkv.split = WeightRule::Split::PerHead;
  qkv.split_heads = c.n_heads;
  WeightTable t;
  t.rules = {
      {"gpt_neox.embed_in.weight", {c.vocab_size, d}, {}, &ModelWeights::tok_embed},
      {p + "input_layernorm.weight", {d}, {&LayerWeights::attn_norm}},
      {p + "input_layernorm.bias", {d}, {&LayerWeights::attn_norm_bias}},
      qkv,
      {p + "attention.dense.weight", {d, d}, {&LayerWeights::w_o}},
      {p + "post_attention_layernorm.weight", {d}, {&LayerWeights::mlp_norm}},
      {p + "post_attention_layernorm.bias", {d}, {&LayerWeights::mlp_norm_bias}},
      {p + "mlp.dense_h_to_4h.weight", {c.d_mlp, d}, {&LayerWeights::w_up}},
      {p + "mlp.dense_h_to_4h.bias", {c.d_mlp}, {&LayerWeights::b_up}},
      {p + "mlp.dense_4h_to_h.weight", {d, c.d_mlp}, {&LayerWeights::w_down}},
      {p + "mlp.dense_4h_to_h.bias", {d}, {&LayerWeights::b_down}},
      {"gpt_neox.final_layer_norm.weight", {d}, {}, &ModelWeights::final_norm},
      {"gpt_neox.final_layer_norm.bias", {d}, {}, &ModelWeights::final_norm_bias},
  };
  if (c.qkv_bias) {
    WeightRule qkv_bias = qkv;
    qkv_bias.pattern = p + "attention.query_key_value.bias";
    qkv_bias.stored_shape = {3 * d};
    qkv_bias.layer_targets = {&LayerWeights::b_q, &LayerWeights::b_k, &LayerWeights::b_v};
    t.rules.push_back(qkv_bias);
    t.rules.push_back({p + "attention.dense.bias", {d}, {&LayerWeights::b_o}});
  }
  WeightRule embed_out{"embed_out.weight", {c.vocab_size, d}, {}, &ModelWeights::unembed};
  embed_out.optional = c.tie_word_embeddings;
  t.rules.push_back(embed_out);
  // Causal-mask and rotary buffers that older transformers versions saved.
  t.ignored = {p + "attention.bias", p + "attention.masked_bias",
               p + "attention.rotary_emb.inv_freq", "gpt_neox.rotary_emb.inv_freq"};
  return t;
}

std::vector<ArchitectureEntry> gpt_neox_architectures() {
  return {{"GPTNeoXForCausalLM", {"gpt_neox"},
           [](const nlohmann::json& j, const std::string&, const std::string& where) {
             return gpt_neox_config_from_hf(j, where);
           },
           [](const ModelConfig& c, const TensorSource&) { return gpt_neox_hf_table(c); }}};
}

}  // namespace poslens::arch
