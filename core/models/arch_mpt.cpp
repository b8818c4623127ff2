// MPT (HF MptForCausalLM, modeling_mpt; MosaicML llm-foundry): ALiBi with MPT's own slopes
// (alibi_bias_max, odd-then-even order for non-power-of-two heads; alibi.h), a fused Wqkv split
// in three consecutive blocks and clamped to ±clip_qkv, no biases anywhere (LayerNorm included:
// HF sets norm_1/norm_2/norm_f bias to None), exact GELU MLP of expansion_ratio·d_model, tied
// head. Options HF's MptModel does not implement are refused (qk_ln, prefix_lm, learned
// positions without ALiBi, biases, logit_scale).
#include "core/models/hf_config.h"
#include "core/base/error.h"

namespace poslens::arch {
namespace {

ModelConfig mpt_config(const nlohmann::json& j, const std::string& where) {
  ModelConfig c;
  c.architecture = "MptForCausalLM";
  c.d_model = require_int(j, "d_model", where);
  c.n_layers = require_int(j, "n_layers", where);
  c.n_heads = require_int(j, "n_heads", where);
  c.n_kv_heads = c.n_heads;
  c.d_head = head_size(c.d_model, c.n_heads, "d_model", "n_heads", where);
  c.d_mlp = int_or(j, "expansion_ratio", 4, where) * c.d_model;
  c.vocab_size = require_int(j, "vocab_size", where);
  c.n_ctx = int_or(j, "max_seq_len", 2048, where);
  c.norm = NormType::LayerNorm;
  c.norm_eps = number_or(j, "layer_norm_epsilon", 1e-5, where);
  c.mlp = MlpType::Plain;
  c.activation = Activation::GeluExact;  // MptMLP: nn.GELU(approximate="none")
  if (!bool_or(j, "no_bias", true, where))
    throw Error(where + ": \"no_bias\": false is not supported (HF's MPT has no biases)");
  if (j.contains("logit_scale") && !j["logit_scale"].is_null())
    throw Error(where + ": \"logit_scale\" is not supported");

  const nlohmann::json attn = j.contains("attn_config") && j["attn_config"].is_object()
                                  ? j["attn_config"] : nlohmann::json::object();
  const std::string attn_where = where + ": attn_config";
  for (const char* unsupported : {"qk_ln", "prefix_lm", "attn_uses_sequence_id"})
    if (bool_or(attn, unsupported, false, attn_where))
      throw Error(attn_where + ": \"" + unsupported + "\": true is not supported");
  if (!bool_or(attn, "alibi", true, attn_where))
    throw Error(attn_where + ": \"alibi\": false (learned positions) is not supported");
  const double bias_max = number_or(attn, "alibi_bias_max", 8.0, attn_where);
  c.pe_components = {{"alibi", nlohmann::json{{"type", "alibi"}, {"slopes", "mpt"},
                                              {"alibi_bias_max", bias_max}}.dump()}};
  if (attn.contains("clip_qkv") && !attn["clip_qkv"].is_null())
    c.clip_qkv = number_or(attn, "clip_qkv", 0.0, attn_where);
  if (attn.contains("softmax_scale") && !attn["softmax_scale"].is_null())
    c.attn_scale = number_or(attn, "softmax_scale", 0.0, attn_where);
  c.tie_word_embeddings = true;  // MptForCausalLM ties lm_head to wte
  c.bos_token_id = -1;
  return c;
}

WeightTable mpt_table(const ModelConfig& c) {
  const std::string p = "transformer.blocks.{L}.";
  const int64_t d = c.d_model;
  WeightTable t;
  t.rules = {
      {"transformer.wte.weight", {c.vocab_size, d}, {}, &ModelWeights::tok_embed},
      {p + "norm_1.weight", {d}, {&LayerWeights::attn_norm}},
      {p + "attn.Wqkv.weight", {3 * d, d}, {&LayerWeights::w_q, &LayerWeights::w_k, &LayerWeights::w_v}},
      {p + "attn.out_proj.weight", {d, d}, {&LayerWeights::w_o}},
      {p + "norm_2.weight", {d}, {&LayerWeights::mlp_norm}},
      {p + "ffn.up_proj.weight", {c.d_mlp, d}, {&LayerWeights::w_up}},
      {p + "ffn.down_proj.weight", {d, c.d_mlp}, {&LayerWeights::w_down}},
      {"transformer.norm_f.weight", {d}, {}, &ModelWeights::final_norm},
  };
  WeightRule lm_head{"lm_head.weight", {c.vocab_size, d}, {}, &ModelWeights::unembed};
  lm_head.optional = true;  // tied: save_pretrained stores it once, as transformer.wte.weight
  t.rules.push_back(lm_head);
  return t;
}

}  // namespace

std::vector<ArchitectureEntry> mpt_architectures() {
  // MosaicML's own configs (trust_remote_code) name the class MPTForCausalLM; same weights.
  std::vector<ArchitectureEntry> entries;
  for (const char* name : {"MptForCausalLM", "MPTForCausalLM"})
    entries.push_back({name, {"mpt"},
                       [](const nlohmann::json& j, const std::string&, const std::string& where) { return mpt_config(j, where); },
                       [](const ModelConfig& c, const TensorSource&) { return mpt_table(c); }});
  return entries;
}

}  // namespace poslens::arch
