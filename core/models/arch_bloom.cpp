// BLOOM (HF BloomForCausalLM, modeling_bloom): ALiBi (Press et al.'s slopes, with the extra
// interleaved slopes when n_head is not a power of two), a LayerNorm on the word embeddings
// (`word_embeddings_layernorm`), pre-LN blocks, biases everywhere, tanh GELU, tied head.
// query_key_value fuses q, k, v PER HEAD ([n_head, 3, d_head] rows, HF `_split_heads`), so it
// is split with WeightRule::Split::PerHead as GPT-NeoX's. BLOOM adds m_h·j (key positions)
// rather than −m_h(i − j): the patterns are identical (see alibi.h). Hub files have no
// "transformer." prefix; files saved from BloomForCausalLM have it and an lm_head tied to the
// embeddings.
#include "core/models/hf_config.h"
#include "core/base/error.h"

namespace poslens::arch {
namespace {

ModelConfig bloom_config(const nlohmann::json& j, const std::string& where) {
  ModelConfig c;
  c.architecture = "BloomForCausalLM";
  // Early BLOOM configs say n_embed for hidden_size (HF BloomConfig's attribute_map).
  c.d_model = int_or(j, "hidden_size", int_or(j, "n_embed", 0, where), where);
  if (c.d_model <= 0) throw Error(where + ": missing \"hidden_size\" (or \"n_embed\")");
  c.n_layers = require_int(j, "n_layer", where);
  c.n_heads = require_int(j, "n_head", where);
  c.n_kv_heads = c.n_heads;
  c.d_head = head_size(c.d_model, c.n_heads, "hidden_size", "n_head", where);
  c.d_mlp = 4 * c.d_model;  // BloomMLP: dense_h_to_4h
  c.vocab_size = require_int(j, "vocab_size", where);
  // ALiBi has no position table; seq_length is the training length where a config names it.
  c.n_ctx = int_or(j, "seq_length", 2048, where);
  c.norm = NormType::LayerNorm;
  c.norm_eps = number_or(j, "layer_norm_epsilon", 1e-5, where);
  c.mlp = MlpType::Plain;
  c.activation = Activation::GeluNew;  // bloom_gelu_forward: the tanh approximation
  if (bool_or(j, "apply_residual_connection_post_layernorm", false, where))
    throw Error(where + ": \"apply_residual_connection_post_layernorm\": true is not supported");
  c.pe_components = {{"alibi", R"({"type": "alibi"})"}};
  c.embed_norm = true;
  c.qkv_bias = c.attn_out_bias = c.mlp_bias = true;
  c.tie_word_embeddings = bool_or(j, "tie_word_embeddings", true, where);
  c.bos_token_id = -1;  // BLOOM's tokenizer does not prepend <s>
  return c;
}

WeightTable bloom_table(const ModelConfig& c, const std::string& prefix) {
  const std::string p = prefix + "h.{L}.";
  const int64_t d = c.d_model;
  WeightRule qkv{p + "self_attention.query_key_value.weight", {3 * d, d},
                 {&LayerWeights::w_q, &LayerWeights::w_k, &LayerWeights::w_v}};
  qkv.split = WeightRule::Split::PerHead;
  qkv.split_heads = c.n_heads;
  WeightRule qkv_bias = qkv;
  qkv_bias.pattern = p + "self_attention.query_key_value.bias";
  qkv_bias.stored_shape = {3 * d};
  qkv_bias.layer_targets = {&LayerWeights::b_q, &LayerWeights::b_k, &LayerWeights::b_v};
  WeightTable t;
  t.rules = {
      {prefix + "word_embeddings.weight", {c.vocab_size, d}, {}, &ModelWeights::tok_embed},
      {prefix + "word_embeddings_layernorm.weight", {d}, {}, &ModelWeights::embed_norm},
      {prefix + "word_embeddings_layernorm.bias", {d}, {}, &ModelWeights::embed_norm_bias},
      {p + "input_layernorm.weight", {d}, {&LayerWeights::attn_norm}},
      {p + "input_layernorm.bias", {d}, {&LayerWeights::attn_norm_bias}},
      qkv,
      qkv_bias,
      {p + "self_attention.dense.weight", {d, d}, {&LayerWeights::w_o}},
      {p + "self_attention.dense.bias", {d}, {&LayerWeights::b_o}},
      {p + "post_attention_layernorm.weight", {d}, {&LayerWeights::mlp_norm}},
      {p + "post_attention_layernorm.bias", {d}, {&LayerWeights::mlp_norm_bias}},
      {p + "mlp.dense_h_to_4h.weight", {c.d_mlp, d}, {&LayerWeights::w_up}},
      {p + "mlp.dense_h_to_4h.bias", {c.d_mlp}, {&LayerWeights::b_up}},
      {p + "mlp.dense_4h_to_h.weight", {d, c.d_mlp}, {&LayerWeights::w_down}},
      {p + "mlp.dense_4h_to_h.bias", {d}, {&LayerWeights::b_down}},
      {prefix + "ln_f.weight", {d}, {}, &ModelWeights::final_norm},
      {prefix + "ln_f.bias", {d}, {}, &ModelWeights::final_norm_bias},
  };
  WeightRule lm_head{"lm_head.weight", {c.vocab_size, d}, {}, &ModelWeights::unembed};
  lm_head.optional = c.tie_word_embeddings;
  t.rules.push_back(lm_head);
  return t;
}

}  // namespace

std::vector<ArchitectureEntry> bloom_architectures() {
  return {{"BloomForCausalLM", {"bloom"},
           [](const nlohmann::json& j, const std::string&, const std::string& where) {
             return bloom_config(j, where);
           },
           [](const ModelConfig& c, const TensorSource& source) {
             for (const auto& t : source.tensors())
               if (t.name.rfind("transformer.", 0) == 0) return bloom_table(c, "transformer.");
             return bloom_table(c, "");
           }}};
}

}  // namespace poslens::arch
