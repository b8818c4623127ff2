// TransformerLens HookedTransformer state dicts (model.state_dict() saved with torch.save or
// safetensors) with their HookedTransformerConfig as JSON beside them
// (hooked_transformer_config.json, or config.json): TL's own weight names and per-head layouts
// (transformer_lens/components/abstract_attention.py, mlps/mlp.py, embed.py, unembed.py):
//   embed.W_E [d_vocab, d_model], pos_embed.W_pos [n_ctx, d_model], unembed.W_U [d_model,
//   d_vocab] + b_U, blocks.{l}.attn.W_Q/W_K/W_V [n_heads, d_model, d_head] + b_Q/b_K/b_V
//   [n_heads, d_head], W_O [n_heads, d_head, d_model] + b_O, mlp.W_in/W_gate [d_model, d_mlp],
//   W_out [d_mlp, d_model], ln1/ln2/ln_final .w/.b.
// Supported: positional_embedding_type standard, rotary (rotary_dim, rotary_base,
// rotary_adjacent_pairs) and alibi; normalization_type LN and RMS; causal or bidirectional
// attention; parallel_attn_mlp; gated_mlp. Refused with a message: shortformer positions,
// LNPre/RMSPre (folded norms), attn_only, grouped-query (n_key_value_heads) state dicts.
#include "core/models/hf_config.h"
#include "core/base/error.h"

namespace poslens::arch {
namespace {

bool is_hooked_transformer_config(const nlohmann::json& j) {
  return j.is_object() && j.contains("d_vocab") && j.contains("n_layers") && j.contains("d_model") &&
         j.contains("d_head") && j.contains("act_fn");
}

std::string text_or(const nlohmann::json& j, const char* key, const std::string& fallback) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : fallback;
}

ModelConfig tl_config(const nlohmann::json& j, const std::string& where) {
  ModelConfig c;
  c.architecture = "HookedTransformer";
  c.format = "TransformerLens";
  c.d_model = require_int(j, "d_model", where);
  c.n_layers = require_int(j, "n_layers", where);
  c.n_heads = require_int(j, "n_heads", where);
  c.d_head = require_int(j, "d_head", where);
  c.n_kv_heads = c.n_heads;
  if (j.contains("n_key_value_heads") && !j["n_key_value_heads"].is_null())
    throw Error(where + ": grouped-query TransformerLens models (n_key_value_heads) are not supported yet");
  if (bool_or(j, "attn_only", false, where))
    throw Error(where + ": attention-only TransformerLens models (attn_only) are not supported yet");
  c.d_mlp = require_int(j, "d_mlp", where);
  c.vocab_size = require_int(j, "d_vocab", where);
  c.n_ctx = require_int(j, "n_ctx", where);
  c.norm_eps = number_or(j, "eps", 1e-5, where);
  const auto norm = text_or(j, "normalization_type", "LN");
  if (norm == "LN") c.norm = NormType::LayerNorm;
  else if (norm == "RMS") c.norm = NormType::RMSNorm;
  else
    throw Error(where + ": normalization_type \"" + norm + "\" is not supported (LN or RMS; fold-free "
                "checkpoints: save with fold_ln=False)");
  const auto act = text_or(j, "act_fn", "gelu");
  if (act == "gelu") c.activation = Activation::GeluExact;
  else if (act == "gelu_new" || act == "gelu_fast" || act == "gelu_pytorch_tanh") c.activation = Activation::GeluNew;
  else if (act == "relu") c.activation = Activation::ReLU;
  else if (act == "silu") c.activation = Activation::SiLU;
  else throw Error(where + ": act_fn \"" + act + "\" is not supported (gelu, gelu_new, relu, silu)");
  c.mlp = bool_or(j, "gated_mlp", false, where) ? MlpType::Gated : MlpType::Plain;
  c.parallel_residual = bool_or(j, "parallel_attn_mlp", false, where);
  const auto dir = text_or(j, "attention_dir", "causal");
  if (dir != "causal" && dir != "bidirectional")
    throw Error(where + ": attention_dir \"" + dir + "\" is not causal or bidirectional");
  c.causal = dir == "causal";
  // TL divides q·k by attn_scale (sqrt(d_head) by default) when use_attn_scale.
  if (!bool_or(j, "use_attn_scale", true, where)) c.attn_scale = 1.0;
  else if (j.contains("attn_scale") && !j["attn_scale"].is_null()) c.attn_scale = 1.0 / number_or(j, "attn_scale", 1.0, where);

  const auto pe = text_or(j, "positional_embedding_type", "standard");
  if (pe == "standard") {
    c.pe_components = {{"learned_absolute", R"({"type": "learned_absolute"})"}};
  } else if (pe == "rotary") {
    const int64_t rotary_dim = j.contains("rotary_dim") && !j["rotary_dim"].is_null() ? require_int(j, "rotary_dim", where) : c.d_head;
    const auto pairing = bool_or(j, "rotary_adjacent_pairs", false, where) ? RopePairing::Interleaved : RopePairing::HalfSplit;
    c.pe_components = {rope_component(nlohmann::json::object(), number_or(j, "rotary_base", 10000.0, where), pairing, rotary_dim)};
  } else if (pe == "alibi") {
    c.pe_components = {{"alibi", R"({"type": "alibi"})"}};
  } else {
    throw Error(where + ": positional_embedding_type \"" + pe + "\" is not supported (standard, rotary, alibi)");
  }
  c.qkv_bias = c.attn_out_bias = c.mlp_bias = true;  // TL layers always carry b_Q, b_O, b_in, ...
  c.tie_word_embeddings = false;
  c.bos_token_id = -1;
  return c;
}

at::Tensor heads_in_out(const at::Tensor& w) {  // [n, d_model, d_head] -> [n·d_head, d_model]
  return w.permute({0, 2, 1}).reshape({w.size(0) * w.size(2), w.size(1)});
}
at::Tensor heads_out(const at::Tensor& w) {  // W_O [n, d_head, d_model] -> [d_model, n·d_head]
  return w.reshape({w.size(0) * w.size(1), w.size(2)}).t();
}
at::Tensor flatten(const at::Tensor& b) { return b.reshape({-1}); }  // [n, d_head] -> [n·d_head]
at::Tensor transposed(const at::Tensor& w) { return w.t(); }

WeightTable tl_table(const ModelConfig& c) {
  const std::string p = "blocks.{L}.";
  const int64_t d = c.d_model, H = c.n_heads, dh = c.d_head;
  auto rule = [](std::string name, std::vector<int64_t> shape, LayerField target, at::Tensor (*f)(const at::Tensor&)) {
    WeightRule r{std::move(name), std::move(shape), {target}};
    r.to_runtime = f;
    return r;
  };
  const bool layer_norm = c.norm == NormType::LayerNorm;
  WeightTable t;
  t.rules = {
      {"embed.W_E", {c.vocab_size, d}, {}, &ModelWeights::tok_embed},
      {p + "ln1.w", {d}, {&LayerWeights::attn_norm}},
      rule(p + "attn.W_Q", {H, d, dh}, &LayerWeights::w_q, heads_in_out),
      rule(p + "attn.W_K", {H, d, dh}, &LayerWeights::w_k, heads_in_out),
      rule(p + "attn.W_V", {H, d, dh}, &LayerWeights::w_v, heads_in_out),
      rule(p + "attn.b_Q", {H, dh}, &LayerWeights::b_q, flatten),
      rule(p + "attn.b_K", {H, dh}, &LayerWeights::b_k, flatten),
      rule(p + "attn.b_V", {H, dh}, &LayerWeights::b_v, flatten),
      rule(p + "attn.W_O", {H, dh, d}, &LayerWeights::w_o, heads_out),
      {p + "attn.b_O", {d}, {&LayerWeights::b_o}},
      {p + "ln2.w", {d}, {&LayerWeights::mlp_norm}},
      rule(p + "mlp.W_in", {d, c.d_mlp}, &LayerWeights::w_up, transposed),
      {p + "mlp.b_in", {c.d_mlp}, {&LayerWeights::b_up}},
      rule(p + "mlp.W_out", {c.d_mlp, d}, &LayerWeights::w_down, transposed),
      {p + "mlp.b_out", {d}, {&LayerWeights::b_down}},
      {"ln_final.w", {d}, {}, &ModelWeights::final_norm},
      {"unembed.W_U", {d, c.vocab_size}, {}, &ModelWeights::unembed, /*transpose=*/true},
      {"unembed.b_U", {c.vocab_size}, {}, &ModelWeights::unembed_bias},
  };
  if (layer_norm) {
    t.rules.push_back({p + "ln1.b", {d}, {&LayerWeights::attn_norm_bias}});
    t.rules.push_back({p + "ln2.b", {d}, {&LayerWeights::mlp_norm_bias}});
    t.rules.push_back({"ln_final.b", {d}, {}, &ModelWeights::final_norm_bias});
  }
  if (c.mlp == MlpType::Gated) t.rules.push_back(rule(p + "mlp.W_gate", {d, c.d_mlp}, &LayerWeights::w_gate, transposed));
  if (c.pe_components.front().type == "learned_absolute") {
    WeightRule pos;
    pos.pattern = "pos_embed.W_pos";
    pos.stored_shape = {c.n_ctx, d};
    pos.pe_name = "pos_embed";
    t.rules.push_back(pos);
  }
  // Buffers: the causal mask, the masked value, rotary tables.
  t.ignored = {p + "attn.mask", p + "attn.IGNORE", p + "attn.rotary_sin", p + "attn.rotary_cos"};
  return t;
}

}  // namespace

std::vector<ArchitectureEntry> transformer_lens_architectures() {
  ArchitectureEntry e{"HookedTransformer", {},
                      [](const nlohmann::json& j, const std::string&, const std::string& where) { return tl_config(j, where); },
                      [](const ModelConfig& c, const TensorSource&) { return tl_table(c); }};
  e.recognise = is_hooked_transformer_config;
  return {e};
}

}  // namespace poslens::arch
