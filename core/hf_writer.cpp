#include "core/hf_writer.h"

#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/safetensors.h"

namespace poslens {
namespace fs = std::filesystem;

at::Tensor permute_interleaved_to_half_split(const at::Tensor& w, int64_t n_heads) {
  const int64_t rows = w.size(0), d_head = rows / n_heads;
  return w.view({n_heads, d_head / 2, 2, w.size(1)}).transpose(1, 2).reshape({rows, w.size(1)});
}

void write_hf_llama(const std::string& dir, const Transformer& model) {
  const auto& c = model.config();
  if (c.norm != NormType::RMSNorm || c.mlp != MlpType::Gated || c.activation != Activation::SiLU ||
      c.position != PositionKind::Rotary || c.rotary_dim != c.d_head || c.sliding_window != 0 ||
      c.rope_scaling.type != "default")
    throw Error("convert: only Llama-family models (RMSNorm, SwiGLU, full RoPE) can be written as "
                "LlamaForCausalLM; " + c.architecture + " cannot");
  if (fs::exists(dir)) throw Error("convert: " + dir + " already exists; choose a new folder");

  const auto& w = model.weights();
  const bool interleaved = c.rope_pairing == RopePairing::Interleaved;
  auto cpu = [](const at::Tensor& t) { return t.to(torch::kCPU, torch::kFloat32).contiguous(); };
  auto qk = [&](const at::Tensor& t, int64_t heads) {
    return cpu(interleaved ? permute_interleaved_to_half_split(t, heads) : t);
  };

  std::vector<std::pair<std::string, at::Tensor>> tensors;
  tensors.emplace_back("model.embed_tokens.weight", cpu(w.tok_embed));
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const auto& lw = w.layers[static_cast<size_t>(l)];
    const std::string p = "model.layers." + std::to_string(l) + ".";
    tensors.emplace_back(p + "input_layernorm.weight", cpu(lw.attn_norm));
    tensors.emplace_back(p + "self_attn.q_proj.weight", qk(lw.w_q, c.n_heads));
    tensors.emplace_back(p + "self_attn.k_proj.weight", qk(lw.w_k, c.n_kv_heads));
    tensors.emplace_back(p + "self_attn.v_proj.weight", cpu(lw.w_v));
    tensors.emplace_back(p + "self_attn.o_proj.weight", cpu(lw.w_o));
    tensors.emplace_back(p + "post_attention_layernorm.weight", cpu(lw.mlp_norm));
    tensors.emplace_back(p + "mlp.gate_proj.weight", cpu(lw.w_gate));
    tensors.emplace_back(p + "mlp.up_proj.weight", cpu(lw.w_up));
    tensors.emplace_back(p + "mlp.down_proj.weight", cpu(lw.w_down));
  }
  tensors.emplace_back("model.norm.weight", cpu(w.final_norm));
  const bool tied = w.unembed.data_ptr() == w.tok_embed.data_ptr();
  if (!tied) tensors.emplace_back("lm_head.weight", cpu(w.unembed));

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
      {"rope_theta", c.rope_theta},
      {"hidden_act", "silu"},
      {"vocab_size", c.vocab_size},
      {"tie_word_embeddings", tied},
      {"torch_dtype", "float32"},
  };
  if (c.bos_token_id >= 0) config["bos_token_id"] = c.bos_token_id;

  const fs::path target(dir);
  const fs::path tmp = target.string() + ".tmp-convert";
  std::error_code ec;
  fs::remove_all(tmp, ec);
  try {
    fs::create_directories(tmp);
    std::ofstream out(tmp / "config.json");
    out << config.dump(2) << "\n";
    out.close();
    if (!out) throw Error("convert: cannot write " + (tmp / "config.json").string());
    write_safetensors((tmp / "model.safetensors").string(), tensors,
                      {{"format", "pt"}, {"converted_by", "poslens"}});
    fs::rename(tmp, target);
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(tmp, ec);
    throw Error("convert: " + std::string(e.what()));
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
}

}  // namespace poslens
