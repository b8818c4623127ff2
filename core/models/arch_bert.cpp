// BERT and RoBERTa masked LMs (HF BertForMaskedLM / RobertaForMaskedLM, modeling_bert,
// modeling_roberta): bidirectional attention, post-LN blocks (norm(x + sublayer(x))), learned
// absolute positions + token-type embeddings summed and normed before the first layer, exact
// GELU, and the MLM head norm(gelu(dense(x))) then the tied decoder with its own bias.
// RoBERTa's positions start at padding_idx + 1 (HF create_position_ids_from_input_ids on text
// without padding): the "learned_absolute" component's offset. Only absolute position
// embeddings are supported (position_embedding_type "relative_key"/"relative_key_query" are
// refused). The pooler and next-sentence head of pre-training checkpoints are not used.
#include "core/models/hf_config.h"
#include "core/base/error.h"

namespace poslens::arch {
namespace {

ModelConfig bert_config(const nlohmann::json& j, const std::string& arch, const std::string& where) {
  const bool roberta = arch.rfind("Roberta", 0) == 0;
  ModelConfig c = hf_decoder_sizes(j, arch, 512, where);
  head_size(c.d_model, c.n_heads, "hidden_size", "num_attention_heads", where);  // BERT's q/k/v are d_model wide
  const auto pe_type = j.value("position_embedding_type", std::string("absolute"));
  if (pe_type != "absolute")
    throw Error(where + ": position_embedding_type \"" + pe_type + "\" is not supported (only \"absolute\")");
  c.norm = NormType::LayerNorm;
  c.norm_eps = number_or(j, "layer_norm_eps", 1e-12, where);
  c.norm_placement = NormPlacement::Post;
  c.mlp = MlpType::Plain;
  const auto act = j.value("hidden_act", std::string("gelu"));
  c.activation = act == "relu" ? Activation::ReLU : gelu_from_hf(act, "hidden_act", arch, where);
  c.causal = false;
  c.embed_norm = true;
  c.final_norm = false;
  c.mlm_head = true;
  c.type_vocab_size = int_or(j, "type_vocab_size", 2, where);
  // RoBERTa: max_position_embeddings counts the padding_idx + 1 rows before position 0.
  const int64_t offset = roberta ? int_or(j, "pad_token_id", 1, where) + 1 : 0;
  c.n_ctx -= offset;
  if (c.n_ctx <= 0)
    throw Error(where + ": max_position_embeddings leaves no position after the padding offset");
  c.pe_components = {{"learned_absolute",
                      nlohmann::json{{"type", "learned_absolute"}, {"offset", offset}}.dump()}};
  c.qkv_bias = c.attn_out_bias = c.mlp_bias = true;
  c.tie_word_embeddings = bool_or(j, "tie_word_embeddings", true, where);
  c.bos_token_id = -1;  // [CLS] / <s> come from the tokenizer's post-processor
  return c;
}

WeightTable bert_table(const ModelConfig& c, bool roberta) {
  const std::string base = roberta ? "roberta." : "bert.";
  const std::string e = base + "embeddings.", p = base + "encoder.layer.{L}.";
  const std::string head = roberta ? "lm_head." : "cls.predictions.";
  const std::string transform = roberta ? head : head + "transform.";
  const int64_t d = c.d_model;
  WeightRule positions;
  positions.pattern = e + "position_embeddings.weight";
  // RoBERTa's table has its offset rows first (bert_config put the offset into the component).
  const int64_t offset = nlohmann::json::parse(c.pe_components.at(0).params_json).value("offset", int64_t{0});
  positions.stored_shape = {c.n_ctx + offset, d};
  positions.pe_name = "pos_embed";
  WeightTable t;
  t.rules = {
      {e + "word_embeddings.weight", {c.vocab_size, d}, {}, &ModelWeights::tok_embed},
      {e + "token_type_embeddings.weight", {c.type_vocab_size, d}, {}, &ModelWeights::token_type_embed},
      {e + "LayerNorm.weight", {d}, {}, &ModelWeights::embed_norm},
      {e + "LayerNorm.bias", {d}, {}, &ModelWeights::embed_norm_bias},
      {p + "attention.self.query.weight", {d, d}, {&LayerWeights::w_q}},
      {p + "attention.self.query.bias", {d}, {&LayerWeights::b_q}},
      {p + "attention.self.key.weight", {d, d}, {&LayerWeights::w_k}},
      {p + "attention.self.key.bias", {d}, {&LayerWeights::b_k}},
      {p + "attention.self.value.weight", {d, d}, {&LayerWeights::w_v}},
      {p + "attention.self.value.bias", {d}, {&LayerWeights::b_v}},
      {p + "attention.output.dense.weight", {d, d}, {&LayerWeights::w_o}},
      {p + "attention.output.dense.bias", {d}, {&LayerWeights::b_o}},
      // Post-LN: the norm after attention is attn_norm, the one after the MLP mlp_norm.
      {p + "attention.output.LayerNorm.weight", {d}, {&LayerWeights::attn_norm}},
      {p + "attention.output.LayerNorm.bias", {d}, {&LayerWeights::attn_norm_bias}},
      {p + "intermediate.dense.weight", {c.d_mlp, d}, {&LayerWeights::w_up}},
      {p + "intermediate.dense.bias", {c.d_mlp}, {&LayerWeights::b_up}},
      {p + "output.dense.weight", {d, c.d_mlp}, {&LayerWeights::w_down}},
      {p + "output.dense.bias", {d}, {&LayerWeights::b_down}},
      {p + "output.LayerNorm.weight", {d}, {&LayerWeights::mlp_norm}},
      {p + "output.LayerNorm.bias", {d}, {&LayerWeights::mlp_norm_bias}},
      {transform + "dense.weight", {d, d}, {}, &ModelWeights::head_dense},
      {transform + "dense.bias", {d}, {}, &ModelWeights::head_dense_bias},
      {transform + (roberta ? "layer_norm.weight" : "LayerNorm.weight"), {d}, {}, &ModelWeights::head_norm},
      {transform + (roberta ? "layer_norm.bias" : "LayerNorm.bias"), {d}, {}, &ModelWeights::head_norm_bias},
      {head + "bias", {c.vocab_size}, {}, &ModelWeights::unembed_bias},
  };
  t.rules.push_back(positions);
  WeightRule decoder{head + "decoder.weight", {c.vocab_size, d}, {}, &ModelWeights::unembed};
  decoder.optional = c.tie_word_embeddings;
  t.rules.push_back(decoder);
  // decoder.bias is head.bias again (HF ties them); the pooler and NSP head are not used.
  t.ignored = {head + "decoder.bias", e + "position_ids", e + "token_type_ids",
               base + "pooler.dense.weight", base + "pooler.dense.bias",
               "cls.seq_relationship.weight", "cls.seq_relationship.bias"};
  return t;
}

}  // namespace

std::vector<ArchitectureEntry> bert_architectures() {
  const auto read = [](const nlohmann::json& j, const std::string& name, const std::string& where) {
    return bert_config(j, name, where);
  };
  return {
      {"BertForMaskedLM", {"bert"}, read,
       [](const ModelConfig& c, const TensorSource&) { return bert_table(c, false); }},
      {"BertForPreTraining", {}, read,
       [](const ModelConfig& c, const TensorSource&) { return bert_table(c, false); }},
      {"RobertaForMaskedLM", {"roberta"}, read,
       [](const ModelConfig& c, const TensorSource&) { return bert_table(c, true); }},
  };
}

}  // namespace poslens::arch
