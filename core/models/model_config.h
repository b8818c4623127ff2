#pragma once
// The shape and block choices of a decoder-only transformer, read from a checkpoint.
// Names follow the field (TransformerLens / HF): d_model, n_heads, n_kv_heads, d_head, rope_theta.
#include <cstdint>
#include <string>
#include <vector>

#include "core/position/components.h"

namespace poslens {

enum class NormType { RMSNorm, LayerNorm };
enum class MlpType { Gated, Plain };  // Gated: down(act(gate(x)) * up(x)) (SwiGLU); Plain: down(act(up(x)))
enum class Activation { SiLU, GeluNew, GeluExact };
struct ModelConfig {
  std::string format;        ///< "llama2.c", "huggingface", ...
  std::string architecture;  ///< "llama2.c", "LlamaForCausalLM", "GPT2LMHeadModel", ...
  int64_t d_model = 0;
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t d_head = 0;
  int64_t d_mlp = 0;
  int64_t vocab_size = 0;
  int64_t n_ctx = 0;  ///< training context length L (max_position_embeddings / seq_len)

  NormType norm = NormType::RMSNorm;
  double norm_eps = 1e-5;
  MlpType mlp = MlpType::Gated;
  Activation activation = Activation::SiLU;

  /// The position encoding as components (position/components.h), in config order, whatever
  /// the format: HF and llama2.c readers translate their RoPE / learned-table settings into
  /// the same "rope" / "learned_absolute" components the PosLens format names. Empty: NoPE.
  std::vector<PositionComponentSpec> pe_components;

  bool qkv_bias = false;
  bool attn_out_bias = false;
  bool mlp_bias = false;
  bool tie_word_embeddings = false;
  int64_t sliding_window = 0;  ///< 0: full causal attention (Mistral: keys within the window)
  bool causal = true;
  /// Multiplies q·k before the softmax; 0 means the usual 1/sqrt(d_head) (T5-style models: 1).
  double attn_scale = 0.0;
  /// x + attn(norm1(x)) + mlp(norm2(x)) instead of two sequential residual steps (GPT-NeoX
  /// `use_parallel_residual`, Phi's parallel block, whose one norm is loaded as both norms).
  bool parallel_residual = false;
  /// Token embeddings are multiplied by this (Gemma: sqrt(d_model), in the compute dtype).
  double embed_scale = 1.0;
  /// RMSNorm multiplies by (norm_weight_offset + w), in float32 (Gemma stores w - 1: offset 1).
  double norm_weight_offset = 0.0;
  int64_t bos_token_id = -1;  ///< -1: the model has no BOS token to prepend
  /// PosLens format only: the config's "training" object as JSON text (task, step, seed, loss,
  /// written by `poslens-cli train`, docs/training.md), empty when absent. Not used by the
  /// forward pass; kept so a checkpoint says how it was made.
  std::string training_json;

  /// Throws poslens::Error naming the first inconsistent field (e.g. n_heads not divisible by
  /// n_kv_heads, d_head odd with rotary, a non-positive size).
  void validate() const;
  /// What position-encoding recipes need: d_model, n_heads, d_head, n_layers, n_ctx, causal.
  PositionContext position_context() const;
  /// attn_scale, or 1/sqrt(d_head) when it is 0.
  double attention_scale() const;
  /// The whole config as a JSON object string (written into HDF5 attributes and shown by info);
  /// for a PosLens-format model its config.json, which loads again.
  std::string to_json() const;
};

const char* to_string(NormType);
const char* to_string(MlpType);
const char* to_string(Activation);

}  // namespace poslens
