// Phi-1 / Phi-1.5 / Phi-2 in the transformers layout (HF PhiForCausalLM, modeling_phi):
// LayerNorm, partial half-split RoPE (partial_rotary_factor·d_head dims), gelu_new MLP, biases
// everywhere (lm_head too), and a parallel block with ONE norm:
//   h = ln(x);  x += dense(attn(h)) + fc2(gelu_new(fc1(h)))
// The runtime's parallel block normalises twice, so input_layernorm is loaded as both
// attn_norm and mlp_norm (WeightRule::Split::Shared), which gives the same h.
// The original Microsoft remote-code layout (model_type phi-msft, "transformer.h.N.mixer.Wqkv")
// is refused.
#include "core/models/hf_config.h"
#include "core/base/error.h"

namespace poslens::arch {

ModelConfig phi_config_from_hf(const nlohmann::json& j, const std::string& where) {
  const std::string model_type = j.value("model_type", std::string("phi"));
  if (model_type != "phi")
    throw Error(where + ": PhiForCausalLM with model_type \"" + model_type +
                "\" is Microsoft's original remote-code layout; only the transformers layout "
                "(model_type \"phi\", model.layers.N.self_attn.q_proj) is supported");
  if (bool_or(j, "qk_layernorm", false, where))
    throw Error(where + ": Phi \"qk_layernorm\": true (LayerNorm on queries and keys) is not "
                "supported");
  ModelConfig c = hf_decoder_sizes(j, "PhiForCausalLM", 2048, where);
  c.norm = NormType::LayerNorm;
  c.norm_eps = number_or(j, "layer_norm_eps", 1e-5, where);
  c.mlp = MlpType::Plain;
  c.activation = gelu_from_hf(j.value("hidden_act", std::string("gelu_new")), "hidden_act",
                              c.architecture, where);

  const double factor = number_or(j, "partial_rotary_factor", 0.5, where);
  if (!(factor > 0 && factor <= 1))
    throw Error(where + ": partial_rotary_factor must be in (0, 1], got " + std::to_string(factor));
  const auto rotary_dim = static_cast<int64_t>(static_cast<double>(c.d_head) * factor);  // HF int()
  // HF rotate_half over the rotary dims.
  c.pe_components = {rope_component(j, hf_rope_theta(j, 10000.0, where),
                                    RopePairing::HalfSplit, rotary_dim)};

  c.parallel_residual = true;
  c.qkv_bias = c.attn_out_bias = c.mlp_bias = true;
  c.tie_word_embeddings = bool_or(j, "tie_word_embeddings", false, where);
  c.bos_token_id = -1;  // GPT-2/CodeGen tokenizer: text is not prefixed with a BOS token
  return c;
}

WeightTable phi_hf_table(const ModelConfig& c) {
  const int64_t d = c.d_model, q = c.n_heads * c.d_head, kv = c.n_kv_heads * c.d_head;
  const std::string p = "model.layers.{L}.";
  auto shared = [](WeightRule r) {
    r.split = WeightRule::Split::Shared;
    return r;
  };
  WeightTable t;
  t.rules = {
      {"model.embed_tokens.weight", {c.vocab_size, d}, {}, &ModelWeights::tok_embed},
      shared({p + "input_layernorm.weight", {d},
              {&LayerWeights::attn_norm, &LayerWeights::mlp_norm}}),
      shared({p + "input_layernorm.bias", {d},
              {&LayerWeights::attn_norm_bias, &LayerWeights::mlp_norm_bias}}),
      {p + "self_attn.q_proj.weight", {q, d}, {&LayerWeights::w_q}},
      {p + "self_attn.q_proj.bias", {q}, {&LayerWeights::b_q}},
      {p + "self_attn.k_proj.weight", {kv, d}, {&LayerWeights::w_k}},
      {p + "self_attn.k_proj.bias", {kv}, {&LayerWeights::b_k}},
      {p + "self_attn.v_proj.weight", {kv, d}, {&LayerWeights::w_v}},
      {p + "self_attn.v_proj.bias", {kv}, {&LayerWeights::b_v}},
      {p + "self_attn.dense.weight", {d, q}, {&LayerWeights::w_o}},
      {p + "self_attn.dense.bias", {d}, {&LayerWeights::b_o}},
      {p + "mlp.fc1.weight", {c.d_mlp, d}, {&LayerWeights::w_up}},
      {p + "mlp.fc1.bias", {c.d_mlp}, {&LayerWeights::b_up}},
      {p + "mlp.fc2.weight", {d, c.d_mlp}, {&LayerWeights::w_down}},
      {p + "mlp.fc2.bias", {d}, {&LayerWeights::b_down}},
      {"model.final_layernorm.weight", {d}, {}, &ModelWeights::final_norm},
      {"model.final_layernorm.bias", {d}, {}, &ModelWeights::final_norm_bias},
      {"lm_head.bias", {c.vocab_size}, {}, &ModelWeights::unembed_bias},
  };
  WeightRule lm_head{"lm_head.weight", {c.vocab_size, d}, {}, &ModelWeights::unembed};
  lm_head.optional = c.tie_word_embeddings;
  t.rules.push_back(lm_head);
  t.ignored = {p + "self_attn.rotary_emb.inv_freq"};
  return t;
}

std::vector<ArchitectureEntry> phi_architectures() {
  return {{"PhiForCausalLM", {"phi"},
           [](const nlohmann::json& j, const std::string&, const std::string& where) {
             return phi_config_from_hf(j, where);
           },
           [](const ModelConfig& c, const TensorSource&) { return phi_hf_table(c); }}};
}

}  // namespace poslens::arch
