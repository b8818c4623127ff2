// Meta's Llama 4 text stack (HF Llama4ForCausalLM, modeling_llama4 of transformers 5.17; Meta
// 2025, "The Llama 4 herd", the iRoPE design):
//  - RoPE layers (`no_rope_layers[l]` = 1; by default all but every `no_rope_layer_interval`-th,
//    4th) rotate q and k with interleaved pairs (HF apply_rotary_emb: view_as_complex), by
//    rope_parameters (Scout: llama3 scaling), attend within chunks of `attention_chunk_size`
//    tokens (layer_types "chunked_attention", ModelConfig::attention_chunk_size) and, with
//    `use_qk_norm`, L2-normalise q and k per head (QkNorm::L2, no gain);
//  - NoPE layers see every earlier key (full_attention), with no q/k norm, and, with
//    `attn_temperature_tuning`, scale their queries by 1 + attn_scale·ln(1 + floor((i + 1) /
//    floor_scale)) (ModelConfig::attn_temperature_scale; Nakanishi 2025, arXiv 2501.19399);
//  - every layer's MLP a mixture of `num_local_experts` experts (Llama4TextMoe): the top
//    `num_experts_per_tok` by router logit, σ(logit) multiplying each expert's input
//    (ExpertRouting::SigmoidOnInput), experts act(gate)·up stored fused as gate_up_proj
//    [E, d_model, 2·d_mlp] (gate the first half) and down_proj [E, d_mlp, d_model], plus a
//    shared expert (a gated SiLU MLP) for every token;
//  - RMSNorm pre-norm blocks, untied head by default.
// Llama4ForConditionalGeneration, the layout Llama 4 Scout ships in: the same text stack, its
// config under `text_config` and its tensors under `language_model.`; the vision tower and the
// projector beside it (`vision_model.`, `multi_modal_projector.`) are known and not loaded: PosLens
// runs the text-only forward (token ids in, no image tokens).
// Llama 4 Maverick interleaves: only the `moe_layers` (default every `interleave_moe_layer_step`-th)
// are mixtures of experts; the others are dense gated SiLU MLPs `intermediate_size_mlp` wide
// (HF Llama4TextMLP; LayerScheme::dense_mlp_width).
#include "core/models/hf_config.h"
#include "core/base/error.h"

#include <algorithm>

namespace poslens::arch {

namespace {

/// Which layers attend in chunks: HF `layer_types` ("chunked_attention" / "full_attention") or,
/// without it, the RoPE layers (Llama4TextConfig's default).
std::vector<bool> chunked_layers(const nlohmann::json& j, const std::vector<bool>& rope, const std::string& where) {
  const auto t = j.find("layer_types");
  if (t == j.end() || !t->is_array()) return rope;
  if (t->size() != rope.size())
    throw Error(where + ": layer_types has " + std::to_string(t->size()) + " entries for " +
                std::to_string(rope.size()) + " layers");
  std::vector<bool> chunked;
  for (const auto& v : *t) {
    const std::string type = v.is_string() ? v.get<std::string>() : "";
    if (type != "chunked_attention" && type != "full_attention")
      throw Error(where + ": layer_types entry \"" + type + "\" is not supported for Llama4ForCausalLM "
                  "(supported: chunked_attention, full_attention)");
    chunked.push_back(type == "chunked_attention");
  }
  return chunked;
}

/// Which layers are mixtures of experts: HF `moe_layers` (layer indices) or, without it,
/// Llama4TextConfig's default every `interleave_moe_layer_step`-th layer from step − 1 (Scout:
/// step 1, every layer; Maverick: step 2, the odd layers). Throws poslens::Error naming `where`
/// for a step < 1 or an index outside the layers.
std::vector<bool> moe_layers(const nlohmann::json& j, int64_t n_layers, const std::string& where) {
  std::vector<bool> moe(static_cast<size_t>(n_layers), false);
  const auto m = j.find("moe_layers");
  if (m != j.end() && m->is_array()) {
    for (const auto& v : *m) {
      const int64_t l = v.is_number_integer() ? v.get<int64_t>() : -1;
      if (l < 0 || l >= n_layers)
        throw Error(where + ": moe_layers entry " + v.dump() + " is not a layer index below " + std::to_string(n_layers));
      moe[static_cast<size_t>(l)] = true;
    }
    return moe;
  }
  const int64_t step = int_or(j, "interleave_moe_layer_step", 1, where);
  if (step < 1) throw Error(where + ": interleave_moe_layer_step must be at least 1 (got " + std::to_string(step) + ")");
  for (int64_t l = step - 1; l < n_layers; l += step) moe[static_cast<size_t>(l)] = true;
  return moe;
}

ModelConfig llama4_config_from_hf(const nlohmann::json& j, const std::string& arch, const std::string& where) {
  ModelConfig c = hf_decoder_sizes(j, arch, 131072, where);
  c.norm = NormType::RMSNorm;
  c.norm_eps = number_or(j, "rms_norm_eps", 1e-5, where);
  const std::string act = j.value("hidden_act", std::string("silu"));
  if (act != "silu") throw Error(where + ": hidden_act \"" + act + "\" is not supported for " + arch + " (supported: silu)");
  c.activation = Activation::SiLU;
  c.tie_word_embeddings = bool_or(j, "tie_word_embeddings", false, where);
  c.qkv_bias = c.attn_out_bias = bool_or(j, "attention_bias", false, where);
  c.bos_token_id = optional_token_id(j, "bos_token_id");

  c.mlp = MlpType::MoE;
  c.expert_activation = ExpertActivation::Gated;
  c.expert_routing = ExpertRouting::SigmoidOnInput;
  c.shared_expert = true;
  c.n_experts = int_or(j, "num_local_experts", 16, where);
  c.n_experts_per_token = int_or(j, "num_experts_per_tok", 1, where);
  const auto moe = moe_layers(j, c.n_layers, where);
  const int64_t dense_width = int_or(j, "intermediate_size_mlp", 16384, where);
  if (dense_width < 1 && std::find(moe.begin(), moe.end(), false) != moe.end())
    throw Error(where + ": intermediate_size_mlp must be positive (the dense layers' MLP width)");

  const auto rope = rope_component(j, hf_rope_theta(j, 500000.0, where), RopePairing::Interleaved, c.d_head);
  c.pe_components = {rope};
  if (bool_or(j, "use_qk_norm", true, where)) c.qk_norm = QkNorm::L2;
  if (bool_or(j, "attn_temperature_tuning", true, where)) {
    c.attn_temperature_scale = number_or(j, "attn_scale", 0.1, where);
    c.attn_temperature_floor = int_or(j, "floor_scale", 8192, where);
  }
  const auto uses_rope = hf_rope_layers(j, c.n_layers, where);
  const auto chunked = chunked_layers(j, uses_rope, where);
  int64_t chunk = 0;
  if (const auto a = j.find("attention_chunk_size"); a != j.end() && !a->is_null())
    chunk = int_or(j, "attention_chunk_size", 0, where);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const bool r = uses_rope[static_cast<size_t>(l)];
    if (chunked[static_cast<size_t>(l)] && chunk <= 0)
      throw Error(where + ": chunked_attention layers need a positive attention_chunk_size");
    LayerScheme s;
    s.pe_components = r ? c.pe_components : std::vector<PositionComponentSpec>{};
    s.attention_chunk_size = chunked[static_cast<size_t>(l)] ? chunk : 0;
    s.qk_norm = r;             // HF: qk_norm only where use_rope
    s.attn_temperature = !r;   // HF: temperature tuning only where not use_rope
    s.dense_mlp_width = moe[static_cast<size_t>(l)] ? 0 : dense_width;
    c.layer_schemes.push_back(s);
  }
  return c;
}

/// gate_up_proj [E, d_model, 2·d_mlp] (gate columns, then up columns; HF Llama4TextExperts
/// chunks it in two) to LayerWeights::experts_gate_up's interleaved columns.
at::Tensor experts_gate_up_runtime(const at::Tensor& stored) {
  const int64_t E = stored.size(0), d_model = stored.size(1), d_mlp = stored.size(2) / 2;
  return stored.view({E, d_model, 2, d_mlp}).transpose(2, 3).reshape({E, d_model, 2 * d_mlp});
}

/// The decoder's rules, then each layer's MLP: on the MoE layers the router, the experts and the
/// shared expert (`feed_forward.router`, `.experts.*`, `.shared_expert.*`); on Maverick's dense
/// layers a gated MLP `feed_forward.{gate,up,down}_proj` of LayerScheme::dense_mlp_width.
WeightTable llama4_hf_table(const ModelConfig& c) {
  const int64_t E = c.n_experts;
  const std::string p = "model.layers.{L}.feed_forward.";
  std::vector<int64_t> moe, dense;
  int64_t dense_width = 0;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const int64_t width = c.dense_mlp_width(l);
    (width > 0 ? dense : moe).push_back(l);
    if (width > 0) dense_width = width;
  }
  WeightTable t;
  t.rules = llama_decoder_rules(c);
  const auto on = [&](WeightRule rule, const std::vector<int64_t>& layers) {
    if (layers.empty()) return;  // an empty only_layers would mean every layer
    if (static_cast<int64_t>(layers.size()) < c.n_layers) rule.only_layers = layers;
    t.rules.push_back(std::move(rule));
  };
  WeightRule gate_up{p + "experts.gate_up_proj", {E, c.d_model, 2 * c.d_mlp}, {&LayerWeights::experts_gate_up}};
  gate_up.to_runtime = experts_gate_up_runtime;
  on({p + "router.weight", {E, c.d_model}, {&LayerWeights::router}}, moe);
  on(gate_up, moe);
  on({p + "experts.down_proj", {E, c.d_mlp, c.d_model}, {&LayerWeights::experts_down}}, moe);
  on({p + "shared_expert.gate_proj.weight", {c.d_mlp, c.d_model}, {&LayerWeights::w_gate}}, moe);
  on({p + "shared_expert.up_proj.weight", {c.d_mlp, c.d_model}, {&LayerWeights::w_up}}, moe);
  on({p + "shared_expert.down_proj.weight", {c.d_model, c.d_mlp}, {&LayerWeights::w_down}}, moe);
  on({p + "gate_proj.weight", {dense_width, c.d_model}, {&LayerWeights::w_gate}}, dense);
  on({p + "up_proj.weight", {dense_width, c.d_model}, {&LayerWeights::w_up}}, dense);
  on({p + "down_proj.weight", {c.d_model, dense_width}, {&LayerWeights::w_down}}, dense);
  return t;
}

/// Llama4ForConditionalGeneration's config: its `text_config` read as Llama4ForCausalLM's (the
/// architecture stays the conditional one, so the table below is chosen). Throws poslens::Error
/// when text_config is missing or not an object, or as llama4_config_from_hf does, naming
/// "<where> text_config".
ModelConfig llama4_multimodal_config(const nlohmann::json& j, const std::string& arch, const std::string& where) {
  return llama4_config_from_hf(text_config(j, arch, where), arch, where + " text_config");
}

/// The text stack's rules under `language_model.` (HF Llama4ForConditionalGeneration.language_model);
/// every stored tensor of the vision tower and the projector is listed as ignored (they are
/// known, and a text-only forward never reads them); anything else stays "unexpected".
WeightTable llama4_multimodal_table(const ModelConfig& c, const TensorSource& source) {
  WeightTable t = llama4_hf_table(c);
  const std::string text = "language_model.";
  for (auto& r : t.rules) r.pattern = text + r.pattern;
  for (auto& name : t.ignored) name = text + name;
  for (const auto& info : source.tensors())
    if (info.name.rfind("vision_model.", 0) == 0 || info.name.rfind("multi_modal_projector.", 0) == 0)
      t.ignored.push_back(info.name);
  return t;
}

}  // namespace

std::vector<ArchitectureEntry> llama4_architectures() {
  const auto read = [](const nlohmann::json& j, const std::string& name, const std::string& where) {
    return llama4_config_from_hf(j, name, where);
  };
  const auto table = [](const ModelConfig& c, const TensorSource&) { return llama4_hf_table(c); };
  const auto read_multimodal = [](const nlohmann::json& j, const std::string& name, const std::string& where) {
    return llama4_multimodal_config(j, name, where);
  };
  return {{"Llama4ForCausalLM", {"llama4_text"}, read, table},
          {"Llama4ForConditionalGeneration", {"llama4"}, read_multimodal, llama4_multimodal_table}};
}

}  // namespace poslens::arch
