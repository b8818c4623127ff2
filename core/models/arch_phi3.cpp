// Microsoft's Phi-3 / Phi-3.5 / Phi-4-mini (HF Phi3ForCausalLM, modeling_phi3 of transformers
// 5.17): Llama's block (RMSNorm pre-norm, SwiGLU, no biases) with
//  - q, k and v fused in one `qkv_proj` ([n_heads·d_head; n_kv_heads·d_head; n_kv_heads·d_head]
//    rows: unequal with grouped kv heads) and gate and up in one `gate_up_proj` ([gate; up]);
//  - RoPE with halves (rotate_half) on the first partial_rotary_factor·d_head dims of each head
//    (Phi-4-mini: 0.75), and LongRoPE (Ding et al. 2024, "LongRoPE: Extending LLM Context Window
//    Beyond 2 Million Tokens", arXiv 2402.13753; the rope type "longrope", older configs "su"):
//    each rotary pair c's frequency divided by its own factor — short_factor[c] while the input
//    is at most original_max_position_embeddings long, long_factor[c] beyond — and cos and sin
//    scaled by sqrt(1 + ln(s) / ln(original)), s = max_position_embeddings / original
//    (core/position/rope_scaling.h);
//  - an optional sliding window (`sliding_window`: keys with i − j < window).
// Phi-3's own configs keep original_max_position_embeddings and partial_rotary_factor at the top
// level; transformers 5 writes them into rope_parameters. Both are read.
#include "core/models/hf_config.h"
#include "core/base/error.h"

namespace poslens::arch {

namespace {

/// `j` with its rope settings where rope_component() reads them: the scaling object (either
/// spelling) given original_max_position_embeddings from the top level when it lacks one, and
/// the legacy types "su" / "yarn" named "longrope", as Phi3Config does.
nlohmann::json phi3_rope_json(const nlohmann::json& j, const std::string& where) {
  nlohmann::json out = j;
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    auto it = out.find(key);
    if (it == out.end() || it->is_null()) continue;
    if (!it->is_object()) throw Error(where + ": \"" + key + "\" must be an object");
    auto& r = *it;
    for (const char* type_key : {"rope_type", "type"})
      if (r.contains(type_key) && (r[type_key] == "su" || r[type_key] == "yarn")) r[type_key] = "longrope";
    if (!r.contains("original_max_position_embeddings") && j.contains("original_max_position_embeddings"))
      r["original_max_position_embeddings"] = j["original_max_position_embeddings"];
  }
  return out;
}

}  // namespace

ModelConfig phi3_config_from_hf(const nlohmann::json& j, const std::string& where) {
  ModelConfig c = llama_config_from_hf(j, "Phi3ForCausalLM", where);
  // Phi3Config: head_dim is hidden_size / num_attention_heads, whatever else the file says.
  c.d_head = head_size(c.d_model, c.n_heads, "hidden_size", "num_attention_heads", where);
  c.norm_eps = number_or(j, "rms_norm_eps", 1e-5, where);
  c.qkv_bias = c.attn_out_bias = c.mlp_bias = false;
  double factor = number_or(j, "partial_rotary_factor", 1.0, where);
  if (const auto p = j.find("rope_parameters"); p != j.end() && p->is_object())
    factor = number_or(*p, "partial_rotary_factor", factor, where);
  if (!(factor > 0 && factor <= 1))
    throw Error(where + ": partial_rotary_factor must be in (0, 1], got " + std::to_string(factor));
  const auto rotary_dim = static_cast<int64_t>(static_cast<double>(c.d_head) * factor);  // HF int()
  const auto rope = phi3_rope_json(j, where);
  c.pe_components = {rope_component(rope, hf_rope_theta(rope, 10000.0, where), RopePairing::HalfSplit, rotary_dim)};
  if (const auto w = j.find("sliding_window"); w != j.end() && !w->is_null())
    c.sliding_window = int_or(j, "sliding_window", 0, where);
  c.tie_word_embeddings = bool_or(j, "tie_word_embeddings", false, where);
  return c;
}

WeightTable phi3_hf_table(const ModelConfig& c) {
  const int64_t q = c.n_heads * c.d_head, kv = c.n_kv_heads * c.d_head;
  const std::string p = "model.layers.{L}.";
  WeightRule qkv{p + "self_attn.qkv_proj.weight", {q + 2 * kv, c.d_model},
                 {&LayerWeights::w_q, &LayerWeights::w_k, &LayerWeights::w_v}};
  qkv.split_rows = {q, kv, kv};
  WeightTable t;
  t.rules = {
      {"model.embed_tokens.weight", {c.vocab_size, c.d_model}, {}, &ModelWeights::tok_embed},
      {p + "input_layernorm.weight", {c.d_model}, {&LayerWeights::attn_norm}},
      qkv,
      {p + "self_attn.o_proj.weight", {c.d_model, q}, {&LayerWeights::w_o}},
      {p + "post_attention_layernorm.weight", {c.d_model}, {&LayerWeights::mlp_norm}},
      {p + "mlp.gate_up_proj.weight", {2 * c.d_mlp, c.d_model}, {&LayerWeights::w_gate, &LayerWeights::w_up}},
      {p + "mlp.down_proj.weight", {c.d_model, c.d_mlp}, {&LayerWeights::w_down}},
      {"model.norm.weight", {c.d_model}, {}, &ModelWeights::final_norm},
  };
  WeightRule lm_head{"lm_head.weight", {c.vocab_size, c.d_model}, {}, &ModelWeights::unembed};
  lm_head.optional = c.tie_word_embeddings;
  t.rules.push_back(lm_head);
  t.ignored = {p + "self_attn.rotary_emb.inv_freq"};
  return t;
}

std::vector<ArchitectureEntry> phi3_architectures() {
  return {{"Phi3ForCausalLM", {"phi3"},
           [](const nlohmann::json& j, const std::string&, const std::string& where) {
             return phi3_config_from_hf(j, where);
           },
           [](const ModelConfig& c, const TensorSource&) { return phi3_hf_table(c); }}};
}

}  // namespace poslens::arch
