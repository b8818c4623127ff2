// Cohere's Command R7B / Command A (HF Cohere2ForCausalLM, modeling_cohere2 of transformers
// 5.17): the design Yang et al. 2025 ("Rope to Nope and Back Again", arXiv 2501.18795) study —
// local sliding-window layers with RoPE and global layers without any position encoding.
//  - layer_types (before it, every `sliding_window_pattern`-th (4th) layer global): local
//    layers see keys with i − j < sliding_window and rotate q and k; global layers see every
//    earlier key and do not rotate (NoPE);
//  - RoPE with interleaved pairs (Cohere's rotate_half takes x[..., ::2] and x[..., 1::2]),
//    rope_theta from rope_parameters (default 10000);
//  - one bias-free LayerNorm per layer feeding a parallel block:
//      h = ln(x);  x += o(attn(h)) + down(silu(gate(h)) * up(h)),
//    loaded as both norms (WeightRule::Split::Shared), as Phi's;
//  - the logits multiplied by logit_scale (0.0625), applied here to the unembedding's input.
#include <algorithm>

#include "core/models/hf_config.h"
#include "core/base/error.h"

namespace poslens::arch {

ModelConfig cohere2_config_from_hf(const nlohmann::json& j, const std::string& where) {
  ModelConfig c = hf_decoder_sizes(j, "Cohere2ForCausalLM", 8192, where);
  c.norm = NormType::LayerNorm;
  c.norm_eps = number_or(j, "layer_norm_eps", 1e-5, where);
  c.mlp = MlpType::Gated;
  const std::string act = j.value("hidden_act", std::string("silu"));
  if (act != "silu") throw Error(where + ": hidden_act \"" + act + "\" is not supported for Cohere2 (supported: silu)");
  c.activation = Activation::SiLU;
  c.parallel_residual = true;
  c.qkv_bias = c.attn_out_bias = bool_or(j, "attention_bias", false, where);
  c.tie_word_embeddings = bool_or(j, "tie_word_embeddings", true, where);
  c.unembed_scale = number_or(j, "logit_scale", 0.0625, where);
  c.bos_token_id = optional_token_id(j, "bos_token_id");
  if (bool_or(j, "use_qk_norm", false, where)) throw Error(where + ": use_qk_norm is not supported for Cohere2");

  const auto rope = rope_component(j, hf_rope_theta(j, 10000.0, where), RopePairing::Interleaved, c.d_head);
  const int64_t window = int_or(j, "sliding_window", 4096, where);
  // The model-wide encoding is the rotary one (what the rotary analyses read); the global
  // layers have none.
  c.pe_components = {rope};
  for (const bool sliding : hf_sliding_layers(j, c.n_layers, 4, where))
    c.layer_schemes.push_back(sliding ? LayerScheme{window, {rope}} : LayerScheme{0, {}});
  return c;
}

WeightTable cohere2_hf_table(const ModelConfig& c) {
  WeightTable t = llama_hf_table(c);
  const std::string p = "model.layers.{L}.";
  // One norm per layer: Llama's second one goes, the first feeds both sublayers.
  t.rules.erase(std::remove_if(t.rules.begin(), t.rules.end(),
                               [&](const WeightRule& r) { return r.pattern == p + "post_attention_layernorm.weight"; }),
                t.rules.end());
  for (auto& r : t.rules)
    if (r.pattern == p + "input_layernorm.weight") {
      r.layer_targets = {&LayerWeights::attn_norm, &LayerWeights::mlp_norm};
      r.split = WeightRule::Split::Shared;
    }
  return t;
}

std::vector<ArchitectureEntry> cohere_architectures() {
  return {{"Cohere2ForCausalLM", {"cohere2"},
           [](const nlohmann::json& j, const std::string&, const std::string& where) {
             return cohere2_config_from_hf(j, where);
           },
           [](const ModelConfig& c, const TensorSource&) { return cohere2_hf_table(c); }}};
}

}  // namespace poslens::arch
