// Gemma 1 (HF GemmaForCausalLM, modeling_gemma): the Llama layout and block with
//  - token embeddings multiplied by sqrt(hidden_size) (embed_scale),
//  - RMSNorm scaling by (1 + w) in float32 (the file stores w - 1: norm_weight_offset 1),
//  - a GeGLU MLP down(gelu_tanh(gate(h)) * up(h)),
//  - head_dim from the config (it need not be hidden_size / num_attention_heads),
//  - tied embeddings by default (no lm_head.weight).
// The tensors are named exactly as Llama's, so the weight table is llama_hf_table.
// Gemma 2 / 3 (logit soft-capping, sandwich norms, alternating sliding window) are refused by
// read_hf_config.
#include <cmath>

#include "core/models/hf_config.h"
#include "core/base/error.h"

namespace poslens::arch {

ModelConfig gemma_config_from_hf(const nlohmann::json& j, const std::string& where) {
  require_int(j, "head_dim", where);  // Gemma's head_dim need not be hidden_size / heads
  ModelConfig c = hf_decoder_sizes(j, "GemmaForCausalLM", 8192, where);
  c.norm = NormType::RMSNorm;
  c.norm_eps = number_or(j, "rms_norm_eps", 1e-6, where);
  c.norm_weight_offset = 1.0;
  c.embed_scale = std::sqrt(static_cast<double>(c.d_model));
  c.mlp = MlpType::Gated;
  // HF GemmaMLP uses `hidden_activation` and, when it is null, gelu_pytorch_tanh whatever
  // `hidden_act` says (the first Gemma configs said "gelu" there; transformers PR 29402).
  const auto it = j.find("hidden_activation");
  const std::string act = (it != j.end() && it->is_string()) ? it->get<std::string>()
                                                               : std::string("gelu_pytorch_tanh");
  c.activation = gelu_from_hf(act, "hidden_activation", c.architecture, where);

  c.pe_components = {rope_component(j, hf_rope_theta(j, 10000.0, where),
                                    RopePairing::HalfSplit /* HF rotate_half */, c.d_head)};

  c.qkv_bias = c.attn_out_bias = bool_or(j, "attention_bias", false, where);
  c.mlp_bias = false;
  c.tie_word_embeddings = bool_or(j, "tie_word_embeddings", true, where);
  c.bos_token_id = optional_token_id(j, "bos_token_id");  // Gemma expects <bos> first
  return c;
}

std::vector<ArchitectureEntry> gemma_architectures() {
  return {{"GemmaForCausalLM", {"gemma"},
           [](const nlohmann::json& j, const std::string&, const std::string& where) {
             return gemma_config_from_hf(j, where);
           },
           [](const ModelConfig& c, const TensorSource&) { return llama_hf_table(c); }}};
}

}  // namespace poslens::arch
