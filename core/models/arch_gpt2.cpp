// GPT-2 (HF GPT2LMHeadModel): LayerNorm, learned absolute positions, GELU MLP, biases
// everywhere. Conv1D weights are stored [in, out] and transposed at load; c_attn holds
// q|k|v fused along its output dimension and is split once. Hub files have no
// "transformer." prefix; files saved from GPT2LMHeadModel do.
#include "core/models/hf_config.h"
#include "core/base/error.h"

namespace poslens::arch {

ModelConfig gpt2_config_from_hf(const nlohmann::json& j, const std::string& where) {
  ModelConfig c;
  c.architecture = "GPT2LMHeadModel";
  c.d_model = require_int(j, "n_embd", where);
  c.n_layers = require_int(j, "n_layer", where);
  c.n_heads = require_int(j, "n_head", where);
  c.n_kv_heads = c.n_heads;
  c.d_head = head_size(c.d_model, c.n_heads, "n_embd", "n_head", where);
  c.d_mlp = int_or(j, "n_inner", 4 * c.d_model, where);
  c.vocab_size = require_int(j, "vocab_size", where);
  c.n_ctx = require_int(j, "n_positions", where);
  c.norm = NormType::LayerNorm;
  c.norm_eps = number_or(j, "layer_norm_epsilon", 1e-5, where);
  c.mlp = MlpType::Plain;
  c.activation = gelu_from_hf(j.value("activation_function", std::string("gelu_new")),
                              "activation_function", c.architecture, where);
  for (const char* unsupported : {"scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn"})
    if (bool_or(j, unsupported, false, where))
      throw Error(where + ": \"" + unsupported + "\": true is not supported");
  if (!bool_or(j, "scale_attn_weights", true, where))
    throw Error(where + ": \"scale_attn_weights\": false is not supported");
  c.pe_components = {{"learned_absolute", R"({"type": "learned_absolute"})"}};
  c.qkv_bias = c.attn_out_bias = c.mlp_bias = true;
  c.tie_word_embeddings = bool_or(j, "tie_word_embeddings", true, where);
  c.bos_token_id = -1;  // GPT-2 text is not conventionally prefixed with <|endoftext|>
  return c;
}

WeightTable gpt2_hf_table(const ModelConfig& c, const std::string& prefix) {
  const std::string p = prefix + "h.{L}.";
  const int64_t d = c.d_model;
  WeightTable t;
  auto transposed = [](WeightRule r) {
    r.transpose = true;
    return r;
  };
  // The learned position table is the "learned_absolute" component's pe.pos_embed.
  WeightRule wpe;
  wpe.pattern = prefix + "wpe.weight";
  wpe.stored_shape = {c.n_ctx, d};
  wpe.pe_name = "pos_embed";
  t.rules = {
      {prefix + "wte.weight", {c.vocab_size, d}, {}, &ModelWeights::tok_embed},
      {p + "ln_1.weight", {d}, {&LayerWeights::attn_norm}},
      {p + "ln_1.bias", {d}, {&LayerWeights::attn_norm_bias}},
      transposed({p + "attn.c_attn.weight", {d, 3 * d},
                  {&LayerWeights::w_q, &LayerWeights::w_k, &LayerWeights::w_v}}),
      {p + "attn.c_attn.bias", {3 * d}, {&LayerWeights::b_q, &LayerWeights::b_k, &LayerWeights::b_v}},
      transposed({p + "attn.c_proj.weight", {d, d}, {&LayerWeights::w_o}}),
      {p + "attn.c_proj.bias", {d}, {&LayerWeights::b_o}},
      {p + "ln_2.weight", {d}, {&LayerWeights::mlp_norm}},
      {p + "ln_2.bias", {d}, {&LayerWeights::mlp_norm_bias}},
      transposed({p + "mlp.c_fc.weight", {d, c.d_mlp}, {&LayerWeights::w_up}}),
      {p + "mlp.c_fc.bias", {c.d_mlp}, {&LayerWeights::b_up}},
      transposed({p + "mlp.c_proj.weight", {c.d_mlp, d}, {&LayerWeights::w_down}}),
      {p + "mlp.c_proj.bias", {d}, {&LayerWeights::b_down}},
      {prefix + "ln_f.weight", {d}, {}, &ModelWeights::final_norm},
      {prefix + "ln_f.bias", {d}, {}, &ModelWeights::final_norm_bias},
  };
  t.rules.push_back(wpe);
  WeightRule lm_head{"lm_head.weight", {c.vocab_size, d}, {}, &ModelWeights::unembed};
  lm_head.optional = c.tie_word_embeddings;
  t.rules.push_back(lm_head);
  t.ignored = {p + "attn.bias", p + "attn.masked_bias"};
  return t;
}

std::vector<ArchitectureEntry> gpt2_architectures() {
  return {{"GPT2LMHeadModel", {"gpt2"},
           [](const nlohmann::json& j, const std::string&, const std::string& where) {
             return gpt2_config_from_hf(j, where);
           },
           [](const ModelConfig& c, const TensorSource& source) {
             // Hub files have no "transformer." prefix; files saved from GPT2LMHeadModel do.
             for (const auto& t : source.tensors())
               if (t.name.rfind("transformer.", 0) == 0) return gpt2_hf_table(c, "transformer.");
             return gpt2_hf_table(c, "");
           }}};
}

}  // namespace poslens::arch
