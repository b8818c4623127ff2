#include "core/models/hf_writer.h"

#include <torch/torch.h>

#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "core/models/hf_config.h"
#include "core/models/model_folder.h"
#include "core/models/weight_table.h"

namespace poslens {

at::Tensor permute_interleaved_to_half_split(const at::Tensor& w, int64_t n_heads) {
  const int64_t rows = w.size(0), d_head = rows / n_heads;
  return w.view({n_heads, d_head / 2, 2, w.size(1)}).transpose(1, 2).reshape({rows, w.size(1)});
}

namespace {

/// Plain full RoPE as LlamaForCausalLM has it: theta and whether the pairs are interleaved;
/// nullopt for any other position encoding (scaled, partial, or not RoPE at all).
std::optional<std::pair<double, RopePairing>> plain_rope(const ModelConfig& c) {
  if (c.pe_components.size() != 1 || c.pe_components.front().type != "rope") return std::nullopt;
  const auto p = nlohmann::json::parse(c.pe_components.front().params_json);
  if (p.contains("rope_scaling") && !p["rope_scaling"].is_null()) return std::nullopt;
  if (p.value("rotary_dim", c.d_head) != c.d_head) return std::nullopt;
  const auto pairing = p.value("pairing", std::string("half_split")) == "interleaved"
                           ? RopePairing::Interleaved
                           : RopePairing::HalfSplit;
  return std::make_pair(p.value("rope_theta", 10000.0), pairing);
}

}  // namespace

void write_hf_llama(const std::string& dir, const ModelConfig& c, const ModelWeights& w) {
  const auto rope = plain_rope(c);
  if (c.norm != NormType::RMSNorm || c.mlp != MlpType::Gated || c.activation != Activation::SiLU ||
      !rope || c.sliding_window != 0 || c.attention_chunk_size != 0 || c.attn_temperature_scale != 0.0 ||
      c.qk_norm != QkNorm::None || c.norm_placement != NormPlacement::Pre || c.per_layer_schemes() ||
      c.latent_attention() || c.value_head_dim() != c.d_head)
    throw Error("convert: only Llama-family models (RMSNorm, SwiGLU, full RoPE on every layer, pre-norm, no q/k "
                "norm) can be "
                "written as LlamaForCausalLM; " + c.architecture + " cannot");
  const auto [rope_theta, pairing] = *rope;

  // The HF folder is the inverse of its load table (llama_hf_table) applied to these weights,
  // with q/k rows permuted so that HF's half-split rotate_half rotates the same pairs.
  const bool tied = w.unembed.defined() && w.unembed.data_ptr() == w.tok_embed.data_ptr();
  ModelConfig hf = c;
  hf.architecture = "LlamaForCausalLM";
  hf.pe_components = {
      arch::rope_component(nlohmann::json::object(), rope_theta, RopePairing::HalfSplit, c.d_head)};
  hf.tie_word_embeddings = tied;
  ModelWeights permuted = w;
  if (pairing == RopePairing::Interleaved)
    for (auto& layer : permuted.layers) {
      layer.w_q = permute_interleaved_to_half_split(layer.w_q, c.n_heads);
      layer.w_k = permute_interleaved_to_half_split(layer.w_k, c.n_kv_heads);
    }
  if (tied) permuted.unembed = at::Tensor();
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  for (auto& [name, t] : table_tensors(arch::llama_hf_table(hf), hf, permuted))
    tensors.emplace_back(name, t.to(torch::kCPU, torch::kFloat32).contiguous());

  nlohmann::ordered_json config = {
      {"architectures", {"LlamaForCausalLM"}},
      {"model_type", "llama"},
      {"hidden_size", c.d_model},
      {"intermediate_size", c.d_mlp},
      {"num_hidden_layers", c.n_layers},
      {"num_attention_heads", c.n_heads},
      {"num_key_value_heads", c.n_kv_heads},
      {"head_dim", c.d_head},
      {"max_position_embeddings", c.n_ctx},
      {"rms_norm_eps", c.norm_eps},
      {"rope_theta", rope_theta},
      {"hidden_act", "silu"},
      {"vocab_size", c.vocab_size},
      {"tie_word_embeddings", tied},
      {"torch_dtype", "float32"},
  };
  if (c.bos_token_id >= 0) config["bos_token_id"] = c.bos_token_id;

  write_model_folder(dir, config.dump(2), tensors, {{"format", "pt"}, {"converted_by", "poslens"}},
                     "convert");
}

}  // namespace poslens
