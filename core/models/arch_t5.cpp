// T5 and Flan-T5 / mT5 (HF T5ForConditionalGeneration, MT5ForConditionalGeneration,
// modeling_t5): an encoder–decoder model. T5's RMS norm (no mean, no bias), no 1/sqrt(d_kv)
// scaling, no biases, q/k/v of n_heads·d_kv (not d_model) rows. Position: the bucketed relative
// bias ("t5" component), one table per stack in its block 0 shared by all its layers,
// bidirectional buckets in the encoder and causal ones in the decoder; cross-attention has none.
// MLP: v1.0 ReLU (wi, wo), v1.1 / Flan-T5 gated GELU-tanh (wi_0 gate, wi_1 up, wo). With tied
// embeddings the decoder output is scaled by d_model^-0.5 before the shared embedding
// (T5ForConditionalGeneration.forward). Layers: encoder.block.{L}.layer.0 = self-attention,
// .layer.1 = MLP; decoder.block.{L}.layer.0 = self-attention, .layer.1 = EncDecAttention,
// .layer.2 = MLP.
#include <cmath>

#include "core/models/hf_config.h"
#include "core/base/error.h"

namespace poslens::arch {
namespace {

ModelConfig t5_config(const nlohmann::json& j, const std::string& arch, const std::string& where) {
  ModelConfig c;
  c.architecture = arch;
  c.d_model = require_int(j, "d_model", where);
  c.d_head = int_or(j, "d_kv", 64, where);
  c.n_heads = require_int(j, "num_heads", where);
  c.n_kv_heads = c.n_heads;
  c.d_mlp = require_int(j, "d_ff", where);
  c.vocab_size = require_int(j, "vocab_size", where);
  c.n_encoder_layers = require_int(j, "num_layers", where);
  c.n_layers = int_or(j, "num_decoder_layers", c.n_encoder_layers, where);
  if (c.n_encoder_layers <= 0) throw Error(where + ": num_layers must be positive");
  c.n_ctx = int_or(j, "n_positions", 512, where);  // no position table: the usual training length
  c.norm = NormType::RMSNorm;
  c.norm_eps = number_or(j, "layer_norm_epsilon", 1e-6, where);
  const auto proj = j.value("feed_forward_proj", std::string("relu"));
  const bool gated = proj.rfind("gated-", 0) == 0;
  const auto act = gated ? proj.substr(6) : proj;
  c.mlp = gated ? MlpType::Gated : MlpType::Plain;
  if (act == "relu") c.activation = Activation::ReLU;
  else if (act == "gelu") c.activation = Activation::GeluNew;  // HF maps T5's "gated-gelu" to gelu_new
  else if (act == "gelu_new") c.activation = Activation::GeluNew;
  else throw Error(where + ": feed_forward_proj \"" + proj + "\" is not supported (relu, gated-gelu, gated-relu)");
  c.attn_scale = 1.0;  // T5 folds the scaling into its initialisation
  c.pe_components = {{"t5", nlohmann::json{{"type", "t5"},
                                           {"num_buckets", int_or(j, "relative_attention_num_buckets", 32, where)},
                                           {"max_distance", int_or(j, "relative_attention_max_distance", 128, where)},
                                           {"shared", true}}.dump()}};
  c.tie_word_embeddings = bool_or(j, "tie_word_embeddings", true, where);
  if (c.tie_word_embeddings) c.unembed_scale = 1.0 / std::sqrt(static_cast<double>(c.d_model));
  c.decoder_start_token_id = int_or(j, "decoder_start_token_id", 0, where);
  c.bos_token_id = -1;  // T5's tokenizer appends </s>; nothing is prepended
  return c;
}

WeightTable t5_table(const ModelConfig& c) {
  const int64_t d = c.d_model, inner = c.n_heads * c.d_head;
  WeightTable t;
  const auto add = [&](const std::string& name, std::vector<int64_t> shape, LayerField field, bool encoder) {
    WeightRule r{name, std::move(shape), {field}};
    r.encoder = encoder;
    t.rules.push_back(r);
  };
  for (const bool encoder : {true, false}) {
    const std::string stack = encoder ? "encoder." : "decoder.", p = stack + "block.{L}.layer.";
    const std::string attn = p + "0.SelfAttention.";
    add(attn + "q.weight", {inner, d}, &LayerWeights::w_q, encoder);
    add(attn + "k.weight", {inner, d}, &LayerWeights::w_k, encoder);
    add(attn + "v.weight", {inner, d}, &LayerWeights::w_v, encoder);
    add(attn + "o.weight", {d, inner}, &LayerWeights::w_o, encoder);
    add(p + "0.layer_norm.weight", {d}, &LayerWeights::attn_norm, encoder);
    WeightRule bias;  // block 0's table, shared by the stack ("t5" component, shared: true)
    bias.pattern = stack + "block.0.layer.0.SelfAttention.relative_attention_bias.weight";
    bias.stored_shape = {nlohmann::json::parse(c.pe_components.at(0).params_json).value("num_buckets", int64_t{32}),
                         c.n_heads};
    bias.pe_name = "t5_bias";
    bias.encoder = encoder;
    t.rules.push_back(bias);
    const std::string mlp = p + (encoder ? "1." : "2.");
    if (!encoder) {
      const std::string cross = p + "1.EncDecAttention.";
      add(cross + "q.weight", {inner, d}, &LayerWeights::w_cq, false);
      add(cross + "k.weight", {inner, d}, &LayerWeights::w_ck, false);
      add(cross + "v.weight", {inner, d}, &LayerWeights::w_cv, false);
      add(cross + "o.weight", {d, inner}, &LayerWeights::w_co, false);
      add(p + "1.layer_norm.weight", {d}, &LayerWeights::cross_norm, false);
    }
    if (c.mlp == MlpType::Gated) {
      add(mlp + "DenseReluDense.wi_0.weight", {c.d_mlp, d}, &LayerWeights::w_gate, encoder);
      add(mlp + "DenseReluDense.wi_1.weight", {c.d_mlp, d}, &LayerWeights::w_up, encoder);
    } else {
      add(mlp + "DenseReluDense.wi.weight", {c.d_mlp, d}, &LayerWeights::w_up, encoder);
    }
    add(mlp + "DenseReluDense.wo.weight", {d, c.d_mlp}, &LayerWeights::w_down, encoder);
    add(mlp + "layer_norm.weight", {d}, &LayerWeights::mlp_norm, encoder);
  }
  t.rules.push_back({"shared.weight", {c.vocab_size, d}, {}, &ModelWeights::tok_embed});
  t.rules.push_back({"encoder.final_layer_norm.weight", {d}, {}, &ModelWeights::encoder_final_norm});
  t.rules.push_back({"decoder.final_layer_norm.weight", {d}, {}, &ModelWeights::final_norm});
  WeightRule lm_head{"lm_head.weight", {c.vocab_size, d}, {}, &ModelWeights::unembed};
  lm_head.optional = c.tie_word_embeddings;
  t.rules.push_back(lm_head);
  // The stacks' own references to the shared embedding (older files store them).
  t.ignored = {"encoder.embed_tokens.weight", "decoder.embed_tokens.weight"};
  return t;
}

}  // namespace

std::vector<ArchitectureEntry> t5_architectures() {
  const auto read = [](const nlohmann::json& j, const std::string& name, const std::string& where) {
    return t5_config(j, name, where);
  };
  const auto table = [](const ModelConfig& c, const TensorSource&) { return t5_table(c); };
  return {{"T5ForConditionalGeneration", {"t5"}, read, table},
          {"MT5ForConditionalGeneration", {"mt5"}, read, table}};
}

}  // namespace poslens::arch
