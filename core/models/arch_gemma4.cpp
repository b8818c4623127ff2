// Gemma 4 text (HF Gemma4ForCausalLM, modeling_gemma4 of transformers 5.17; Gemma4ForConditionalGeneration's
// language model, read without its vision and audio towers). Gemma 3's block (sandwich norms, q/k RMSNorm
// per head, GeGLU, embeddings times sqrt(hidden_size), local and global layers from `layer_types`, the
// last layer forced global as HF does) with:
//  - RMSNorm x·w (Gemma4RMSNorm: no 1 + w offset), the softmax scale 1 (no 1/sqrt(head_dim)),
//  - values RMS-normed without a gain (v_norm),
//  - global layers with heads of their own size and key/value head count: HF `per_layer_config`
//    ({"5": {"head_dim": 512, "num_key_value_heads": 4}}), or the keys it is made from
//    (`global_head_dim`, default 512; `num_global_key_value_heads` with attention_k_eq_v),
//  - `attention_k_eq_v`: the global layers' values are their keys' projection,
//  - global RoPE "proportional" (p-RoPE: partial_rotary_factor 0.25 of the components rotate,
//    rope_scaling.h; Barbero et al. 2024, arXiv 2410.06205), local RoPE default with its own base,
//  - `num_kv_shared_layers`: the last layers reuse the keys and values of the last earlier layer of
//    their type (their stored k/v projections, if any, are ignored as HF ignores them), with
//    MLPs twice as wide under `use_double_wide_mlp`,
//  - per-layer inputs (`hidden_size_per_layer_input`, PLE; core/runtime/per_layer_inputs.h) and a
//    scalar per layer on its output (`layer_scalar`),
//  - the output logits soft-capped at final_logit_softcapping,
//  - the mixture-of-experts block (`enable_moe_block`, gemma-4-26B-A4B): beside the dense MLP,
//    `num_experts` GeGLU experts `moe_intermediate_size` wide, the top `top_k_experts` of a router
//    with its own norm, scale and per-expert scale (ExpertRouting::ScaledSoftmaxAll), each half
//    with its own norms (ModelConfig::experts_beside_mlp; the dense MLP is the shared expert).
// Bidirectional attention (use_bidirectional_attention "all") is refused with a message.
#include <cmath>
#include <map>
#include <tuple>
#include <utility>

#include "core/base/error.h"
#include "core/models/hf_config.h"

namespace poslens::arch {
namespace {

/// One layer's head size and key/value head count: the global layers' from `per_layer_config`
/// (index -> overrides), else from global_head_dim / num_global_key_value_heads as HF derives
/// them (Gemma4TextConfig.__post_init__).
struct HeadSizes {
  int64_t d_head = 0, n_kv_heads = 0;
};

std::vector<HeadSizes> gemma4_head_sizes(const nlohmann::json& j, const ModelConfig& c, const std::vector<bool>& sliding,
                                         const std::string& where) {
  std::vector<HeadSizes> sizes(static_cast<size_t>(c.n_layers), {c.d_head, c.n_kv_heads});
  if (const auto p = j.find("per_layer_config"); p != j.end() && !p->is_null()) {
    if (!p->is_object()) throw Error(where + ": per_layer_config must be an object");
    for (const auto& [key, overrides] : p->items()) {
      const std::string at = where + " per_layer_config." + key;
      size_t used = 0;
      int64_t l = -1;
      try {
        l = std::stoll(key, &used);
      } catch (const std::exception&) {
      }
      if (used != key.size() || l < 0 || l >= c.n_layers)
        throw Error(at + ": not a layer index in [0, " + std::to_string(c.n_layers) + ")");
      if (!overrides.is_object()) throw Error(at + " must be an object");
      for (const auto& [name, value] : overrides.items())
        if (name != "head_dim" && name != "num_key_value_heads")
          throw Error(at + ": \"" + name + "\" is not supported (supported: head_dim, num_key_value_heads)");
      auto& s = sizes[static_cast<size_t>(l)];
      s.d_head = int_or(overrides, "head_dim", s.d_head, at);
      s.n_kv_heads = int_or(overrides, "num_key_value_heads", s.n_kv_heads, at);
    }
    return sizes;
  }
  const int64_t global_d_head = int_or(j, "global_head_dim", 512, where);
  const bool k_eq_v = bool_or(j, "attention_k_eq_v", false, where);
  const int64_t global_kv = k_eq_v ? int_or(j, "num_global_key_value_heads", c.n_kv_heads, where) : c.n_kv_heads;
  for (int64_t l = 0; l < c.n_layers; ++l)
    if (!sliding[static_cast<size_t>(l)]) sizes[static_cast<size_t>(l)] = {global_d_head, global_kv};
  return sizes;
}

/// The rope component of one layer type: rope_parameters.<type>, or HF's defaults (local:
/// default, base 10000; global: proportional, 0.25 of the components, base 1e6).
PositionComponentSpec gemma4_rope(const nlohmann::json& j, bool global, int64_t d_head, const std::string& where) {
  const nlohmann::json defaults =
      global ? nlohmann::json{{"rope_type", "proportional"}, {"partial_rotary_factor", 0.25}, {"rope_theta", 1e6}}
             : nlohmann::json{{"rope_type", "default"}, {"rope_theta", 1e4}};
  return layer_type_rope(j, global ? "full_attention" : "sliding_attention", defaults, d_head, where);
}

/// `enable_moe_block`'s experts on `c` (the dense MLP, intermediate_size wide, becomes the
/// shared expert; d_mlp the experts' width). Throws poslens::Error naming `where` when
/// num_experts, top_k_experts or moe_intermediate_size is missing or not positive.
void gemma4_experts(const nlohmann::json& j, ModelConfig& c, const std::string& where) {
  const auto positive = [&](const char* key) {
    const int64_t v = int_or(j, key, 0, where);  // HF's default: None
    if (v < 1) throw Error(where + ": enable_moe_block needs a positive " + key);
    return v;
  };
  c.mlp = MlpType::MoE;
  c.experts_beside_mlp = true;
  c.shared_expert = true;
  c.shared_expert_width = c.d_mlp;
  c.n_experts = positive("num_experts");
  c.n_experts_per_token = positive("top_k_experts");
  c.d_mlp = positive("moe_intermediate_size");
  c.expert_activation = ExpertActivation::Gated;
  c.expert_routing = ExpertRouting::ScaledSoftmaxAll;
}

ModelConfig gemma4_config_from_hf(const nlohmann::json& j, const std::string& arch, const std::string& where) {
  ModelConfig c = hf_decoder_sizes(j, arch, 131072, where);
  c.d_head = int_or(j, "head_dim", 256, where);
  c.norm = NormType::RMSNorm;
  c.norm_eps = number_or(j, "rms_norm_eps", 1e-6, where);
  c.norm_placement = NormPlacement::Sandwich;
  c.norm_gain_in_float32 = true;  // Gemma4RMSNorm: (normed · w) in float32, then cast
  c.qk_norm = QkNorm::PerHead;
  c.v_norm = true;
  c.attn_scale = 1.0;
  c.embed_scale = std::sqrt(static_cast<double>(c.d_model));
  c.mlp = MlpType::Gated;
  const auto act = j.find("hidden_activation");
  c.activation = gelu_from_hf(act != j.end() && act->is_string() ? act->get<std::string>() : "gelu_pytorch_tanh",
                              "hidden_activation", arch, where);
  if (bool_or(j, "attention_bias", false, where))
    throw Error(where + ": attention_bias is not supported for Gemma 4 (no released model has it)");
  c.tie_word_embeddings = bool_or(j, "tie_word_embeddings", true, where);
  c.bos_token_id = optional_token_id(j, "bos_token_id");
  c.final_logit_softcap = number_or(j, "final_logit_softcapping", 0.0, where);  // null: none
  c.layer_scalar = true;
  if (const auto b = j.find("use_bidirectional_attention"); b != j.end() && *b == "all")
    throw Error(where + ": use_bidirectional_attention \"all\" is not supported (causal text models only)");
  if (bool_or(j, "enable_moe_block", false, where)) gemma4_experts(j, c, where);

  auto sliding = hf_sliding_layers(j, c.n_layers, 6, where);
  if (!sliding.empty()) sliding.back() = false;  // HF forces the last layer global
  const auto sizes = gemma4_head_sizes(j, c, sliding, where);
  const bool k_eq_v = bool_or(j, "attention_k_eq_v", false, where);
  const int64_t window = int_or(j, "sliding_window", 512, where);
  const int64_t n_shared = int_or(j, "num_kv_shared_layers", 0, where);
  if (n_shared < 0 || n_shared >= c.n_layers)
    throw Error(where + ": num_kv_shared_layers " + std::to_string(n_shared) + " must be in [0, num_hidden_layers)");
  const int64_t first_shared = c.n_layers - n_shared;
  const bool double_wide = bool_or(j, "use_double_wide_mlp", false, where);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const bool local = sliding[static_cast<size_t>(l)];
    const auto& size = sizes[static_cast<size_t>(l)];
    LayerScheme s{local ? window : 0, {gemma4_rope(j, !local, size.d_head, where)}};
    s.d_head = size.d_head;
    s.n_kv_heads = size.n_kv_heads;
    s.values_from_keys = k_eq_v && !local;
    if (l >= first_shared) {  // the last earlier layer of its type (HF store_full_length_kv)
      for (int64_t k = first_shared - 1; k >= 0 && s.kv_source_layer < 0; --k)
        if (sliding[static_cast<size_t>(k)] == local) s.kv_source_layer = k;
      if (s.kv_source_layer < 0)
        throw Error(where + ": layer " + std::to_string(l) + " shares keys and values, but no earlier layer has its type");
      if (double_wide && c.experts_beside_mlp)
        throw Error(where + ": use_double_wide_mlp with enable_moe_block is not supported (no released model has both)");
      if (double_wide) s.dense_mlp_width = 2 * c.d_mlp;
    }
    c.layer_schemes.push_back(s);
  }
  // The model-wide encoding and head size are the local layers' (HF head_dim; each layer attends
  // by its own scheme).
  c.sliding_window = window;
  c.pe_components = {gemma4_rope(j, false, c.d_head, where)};

  c.per_layer_input_width = int_or(j, "hidden_size_per_layer_input", 256, where);
  if (c.per_layer_input_width < 0) throw Error(where + ": hidden_size_per_layer_input must not be negative");
  c.per_layer_input_vocab = int_or(j, "vocab_size_per_layer_input", 262144, where);
  return c;
}

/// Gemma4ForConditionalGeneration's config: its `text_config` read as Gemma4ForCausalLM's (the
/// architecture stays the conditional one, so its table is chosen).
ModelConfig gemma4_multimodal_config(const nlohmann::json& j, const std::string& arch, const std::string& where) {
  ModelConfig c = gemma4_config_from_hf(text_config(j, arch, where), arch, where + " text_config");
  c.tie_word_embeddings = bool_or(j, "tie_word_embeddings", c.tie_word_embeddings, where);
  return c;
}

/// Rule `r` on the layers `layers` (every layer when all of them).
void on_layers(WeightTable& t, WeightRule r, const std::vector<int64_t>& layers, int64_t n_layers) {
  if (layers.empty()) return;
  if (static_cast<int64_t>(layers.size()) < n_layers) r.only_layers = layers;
  t.rules.push_back(std::move(r));
}

/// The text stack's tensors under `prefix` ("model." for Gemma4ForCausalLM,
/// "model.language_model." for the conditional model): per group of layers with the same head
/// sizes, projections and MLP width, its rules on those layers only.
WeightTable gemma4_table(const ModelConfig& c, const std::string& prefix) {
  WeightTable t;
  const std::string p = prefix + "layers.{L}.";
  t.rules = {{prefix + "embed_tokens.weight", {c.vocab_size, c.d_model}, {}, &ModelWeights::tok_embed},
             {prefix + "norm.weight", {c.d_model}, {}, &ModelWeights::final_norm}};
  WeightRule lm_head{"lm_head.weight", {c.vocab_size, c.d_model}, {}, &ModelWeights::unembed};
  lm_head.optional = c.tie_word_embeddings;
  t.rules.push_back(lm_head);
  std::vector<int64_t> all;
  for (int64_t l = 0; l < c.n_layers; ++l) all.push_back(l);
  for (const auto& [name, field] : {std::pair{"input_layernorm", &LayerWeights::attn_norm},
                                    std::pair{"post_attention_layernorm", &LayerWeights::attn_post_norm},
                                    std::pair{"pre_feedforward_layernorm", &LayerWeights::mlp_norm},
                                    std::pair{"post_feedforward_layernorm", &LayerWeights::mlp_post_norm}})
    t.rules.push_back({p + name + ".weight", {c.d_model}, {field}});
  WeightRule scalar{p + "layer_scalar", {1}, {&LayerWeights::layer_scalar}};
  scalar.optional = true;  // HF initialises it to 1 when a file lacks it
  t.rules.push_back(scalar);

  // Layers grouped by what their tensors' shapes depend on.
  std::map<std::tuple<int64_t, int64_t, bool, bool, int64_t>, std::vector<int64_t>> groups;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const auto lc = c.layer_config(l);
    const int64_t dense_width = lc.experts_beside_mlp ? lc.shared_expert_width : lc.d_mlp;
    groups[{lc.d_head, lc.n_kv_heads, lc.kv_source_layer >= 0, lc.values_from_keys, dense_width}].push_back(l);
  }
  for (const auto& [key, layers] : groups) {
    const auto [d_head, n_kv, shared, k_eq_v, d_mlp] = key;
    const int64_t q = c.n_heads * d_head, kv = n_kv * d_head;
    on_layers(t, {p + "self_attn.q_proj.weight", {q, c.d_model}, {&LayerWeights::w_q}}, layers, c.n_layers);
    on_layers(t, {p + "self_attn.q_norm.weight", {d_head}, {&LayerWeights::q_norm}}, layers, c.n_layers);
    on_layers(t, {p + "self_attn.o_proj.weight", {c.d_model, q}, {&LayerWeights::w_o}}, layers, c.n_layers);
    if (!shared) {
      on_layers(t, {p + "self_attn.k_proj.weight", {kv, c.d_model}, {&LayerWeights::w_k}}, layers, c.n_layers);
      on_layers(t, {p + "self_attn.k_norm.weight", {d_head}, {&LayerWeights::k_norm}}, layers, c.n_layers);
      if (!k_eq_v)
        on_layers(t, {p + "self_attn.v_proj.weight", {kv, c.d_model}, {&LayerWeights::w_v}}, layers, c.n_layers);
    } else {  // HF drops a shared layer's own k/v projections and norms on load
      for (const int64_t l : layers)
        for (const char* name : {"k_proj.weight", "v_proj.weight", "k_norm.weight", "v_norm.weight"})
          t.ignored.push_back(prefix + "layers." + std::to_string(l) + ".self_attn." + name);
    }
    on_layers(t, {p + "mlp.gate_proj.weight", {d_mlp, c.d_model}, {&LayerWeights::w_gate}}, layers, c.n_layers);
    on_layers(t, {p + "mlp.up_proj.weight", {d_mlp, c.d_model}, {&LayerWeights::w_up}}, layers, c.n_layers);
    on_layers(t, {p + "mlp.down_proj.weight", {c.d_model, d_mlp}, {&LayerWeights::w_down}}, layers, c.n_layers);
  }

  if (c.experts_beside_mlp) {  // every layer's (HF Gemma4TextRouter, Gemma4TextExperts)
    const int64_t E = c.n_experts;
    WeightRule gate_up{p + "experts.gate_up_proj", {E, 2 * c.d_mlp, c.d_model}, {&LayerWeights::experts_gate_up}};
    gate_up.to_runtime = stacked_experts_gate_up;
    WeightRule down{p + "experts.down_proj", {E, c.d_model, c.d_mlp}, {&LayerWeights::experts_down}};
    down.to_runtime = stacked_experts_down;
    t.rules.push_back(gate_up);
    t.rules.push_back(down);
    t.rules.push_back({p + "router.proj.weight", {E, c.d_model}, {&LayerWeights::router}});
    t.rules.push_back({p + "router.scale", {c.d_model}, {&LayerWeights::router_scale}});
    t.rules.push_back({p + "router.per_expert_scale", {E}, {&LayerWeights::per_expert_scale}});
    for (const auto& [name, field] : {std::pair{"post_feedforward_layernorm_1", &LayerWeights::shared_expert_post_norm},
                                      std::pair{"pre_feedforward_layernorm_2", &LayerWeights::experts_norm},
                                      std::pair{"post_feedforward_layernorm_2", &LayerWeights::experts_post_norm}})
      t.rules.push_back({p + name + ".weight", {c.d_model}, {field}});
  }

  if (const int64_t P = c.per_layer_input_width; P > 0) {
    const int64_t LP = c.n_layers * P;
    t.rules.push_back({prefix + "embed_tokens_per_layer.weight", {c.per_layer_input_vocab, LP}, {},
                       &ModelWeights::per_layer_embed});
    t.rules.push_back({prefix + "per_layer_model_projection.weight", {LP, c.d_model}, {},
                       &ModelWeights::per_layer_model_projection});
    t.rules.push_back({prefix + "per_layer_projection_norm.weight", {P}, {}, &ModelWeights::per_layer_projection_norm});
    t.rules.push_back({p + "per_layer_input_gate.weight", {P, c.d_model}, {&LayerWeights::per_layer_gate}});
    t.rules.push_back({p + "per_layer_projection.weight", {c.d_model, P}, {&LayerWeights::per_layer_projection}});
    t.rules.push_back({p + "post_per_layer_input_norm.weight", {c.d_model}, {&LayerWeights::per_layer_norm}});
  }
  return t;
}

/// The conditional model's text stack (under model.language_model.); every tensor of its vision
/// and audio towers and their embedders is listed as ignored (a text-only forward never reads
/// them); anything else stays "unexpected".
WeightTable gemma4_multimodal_table(const ModelConfig& c, const TensorSource& source) {
  WeightTable t = gemma4_table(c, "model.language_model.");
  for (const auto& info : source.tensors())
    for (const char* tower : {"model.vision_tower.", "model.embed_vision.", "model.audio_tower.", "model.embed_audio."})
      if (info.name.rfind(tower, 0) == 0) t.ignored.push_back(info.name);
  return t;
}

}  // namespace

std::vector<ArchitectureEntry> gemma4_architectures() {
  return {{"Gemma4ForCausalLM", {"gemma4_text"},
           [](const nlohmann::json& j, const std::string& name, const std::string& where) {
             return gemma4_config_from_hf(j, name, where);
           },
           [](const ModelConfig& c, const TensorSource&) { return gemma4_table(c, "model."); }},
          {"Gemma4ForConditionalGeneration", {"gemma4"},
           [](const nlohmann::json& j, const std::string& name, const std::string& where) {
             return gemma4_multimodal_config(j, name, where);
           },
           gemma4_multimodal_table}};
}

}  // namespace poslens::arch
