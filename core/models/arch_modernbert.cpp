// ModernBERT masked LMs (HF ModernBertForMaskedLM, modeling_modernbert of transformers 5.17;
// Warner et al. 2024, "Smarter, Better, Faster, Longer", arXiv 2412.13663 §2.1):
//  - bidirectional; layer_types (before them, every `global_attn_every_n_layers`-th layer
//    from layer 0 global, default 3): global layers see every key, local layers the keys with
//    |i − j| ≤ local_attention / 2 (ModelConfig::window_both_sides, sliding_window
//    local_attention / 2 + 1);
//  - RoPE with halves on every layer, the base per layer type: rope_parameters.full_attention
//    / .sliding_attention (older configs: global_rope_theta 160000, local_rope_theta 10000);
//  - pre-norm LayerNorm blocks without biases (attention_bias, mlp_bias, norm_bias and
//    classifier_bias true are refused: no released model has them); layer 0's attention has no
//    norm (nn.Identity: ModelConfig::first_attn_norm false), the embeddings one;
//  - fused Wqkv, GeGLU MLP from one Wi: act(first half) · second half, hidden_activation;
//  - the head norm(act(dense(x))) (classifier_activation), then the decoder tied to the
//    embeddings with its bias (decoder_bias).
#include "core/models/hf_config.h"
#include "core/base/error.h"

namespace poslens::arch {
namespace {

/// The rotary component of one layer type: rope_parameters.<type>, or the older key's base.
PositionComponentSpec modernbert_rope(const nlohmann::json& j, const std::string& type, const char* older_key,
                                      double older_default, int64_t d_head, const std::string& where) {
  const nlohmann::json older{{"rope_type", "default"}, {"rope_theta", number_or(j, older_key, older_default, where)}};
  return layer_type_rope(j, type, older, d_head, where);
}

ModelConfig modernbert_config(const nlohmann::json& j, const std::string& where) {
  ModelConfig c = hf_decoder_sizes(j, "ModernBertForMaskedLM", 8192, where);
  c.d_head = head_size(c.d_model, c.n_heads, "hidden_size", "num_attention_heads", where);
  c.n_kv_heads = c.n_heads;
  c.causal = false;
  c.norm = NormType::LayerNorm;
  c.norm_eps = number_or(j, "norm_eps", 1e-5, where);
  c.mlp = MlpType::Gated;
  const auto act = j.value("hidden_activation", std::string("gelu"));
  c.activation = gelu_from_hf(act, "hidden_activation", c.architecture, where);
  const auto head_act = j.value("classifier_activation", std::string("gelu"));
  if (gelu_from_hf(head_act, "classifier_activation", c.architecture, where) != c.activation)
    throw Error(where + ": classifier_activation \"" + head_act + "\" differs from hidden_activation \"" + act +
                "\" (PosLens's head uses the block's activation)");
  // The released ModernBERTs have none of these biases; the reader refuses them rather than
  // guess their layout.
  for (const char* key : {"attention_bias", "mlp_bias", "norm_bias", "classifier_bias"})
    if (bool_or(j, key, false, where)) throw Error(where + ": " + key + " true is not supported for ModernBERT");
  c.embed_norm = true;
  c.first_attn_norm = false;
  c.mlm_head = true;
  c.tie_word_embeddings = bool_or(j, "tie_word_embeddings", true, where);
  c.window_both_sides = true;
  c.bos_token_id = -1;  // [CLS] comes from the tokenizer's post-processor

  const auto global = modernbert_rope(j, "full_attention", "global_rope_theta", 160000.0, c.d_head, where);
  const auto local = modernbert_rope(j, "sliding_attention", "local_rope_theta", 10000.0, c.d_head, where);
  std::vector<bool> sliding;
  if (const auto t = j.find("layer_types"); t != j.end() && t->is_array()) {
    sliding = hf_sliding_layers(j, c.n_layers, 1, where);
  } else {
    const int64_t every = int_or(j, "global_attn_every_n_layers", 3, where);
    if (every <= 0) throw Error(where + ": global_attn_every_n_layers must be positive");
    for (int64_t l = 0; l < c.n_layers; ++l) sliding.push_back(l % every != 0);
  }
  const int64_t local_attention = int_or(j, "local_attention", 128, where);
  if (local_attention < 2) throw Error(where + ": local_attention must be at least 2");
  c.pe_components = {global};
  for (const bool s : sliding) c.layer_schemes.push_back(s ? LayerScheme{local_attention / 2 + 1, {local}} : LayerScheme{0, {global}});
  return c;
}

WeightTable modernbert_table(const ModelConfig& c) {
  const int64_t d = c.d_model;
  const std::string p = "model.layers.{L}.";
  WeightTable t;
  t.rules = {
      {"model.embeddings.tok_embeddings.weight", {c.vocab_size, d}, {}, &ModelWeights::tok_embed},
      {"model.embeddings.norm.weight", {d}, {}, &ModelWeights::embed_norm},
      {p + "attn.Wqkv.weight", {3 * d, d}, {&LayerWeights::w_q, &LayerWeights::w_k, &LayerWeights::w_v}},
      {p + "attn.Wo.weight", {d, d}, {&LayerWeights::w_o}},
      {p + "mlp_norm.weight", {d}, {&LayerWeights::mlp_norm}},
      {p + "mlp.Wi.weight", {2 * c.d_mlp, d}, {&LayerWeights::w_gate, &LayerWeights::w_up}},
      {p + "mlp.Wo.weight", {d, c.d_mlp}, {&LayerWeights::w_down}},
      {"model.final_norm.weight", {d}, {}, &ModelWeights::final_norm},
      {"head.dense.weight", {d, d}, {}, &ModelWeights::head_dense},
      {"head.norm.weight", {d}, {}, &ModelWeights::head_norm},
  };
  WeightRule decoder_bias{"decoder.bias", {c.vocab_size}, {}, &ModelWeights::unembed_bias};
  decoder_bias.optional = true;  // absent with decoder_bias false
  t.rules.push_back(decoder_bias);
  // Layer 0 has no attention norm (nn.Identity): the rule is optional, and absent there.
  WeightRule attn_norm{p + "attn_norm.weight", {d}, {&LayerWeights::attn_norm}};
  attn_norm.optional = true;
  t.rules.push_back(attn_norm);
  WeightRule decoder{"decoder.weight", {c.vocab_size, d}, {}, &ModelWeights::unembed};
  decoder.optional = c.tie_word_embeddings;
  t.rules.push_back(decoder);
  return t;
}

}  // namespace

std::vector<ArchitectureEntry> modernbert_architectures() {
  return {{"ModernBertForMaskedLM", {"modernbert"},
           [](const nlohmann::json& j, const std::string&, const std::string& where) {
             return modernbert_config(j, where);
           },
           [](const ModelConfig& c, const TensorSource&) { return modernbert_table(c); }}};
}

}  // namespace poslens::arch
