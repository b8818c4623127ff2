#pragma once
// The shape and block choices of a decoder-only transformer, read from a checkpoint.
// Names follow the field (TransformerLens / HF): d_model, n_heads, n_kv_heads, d_head, rope_theta.
#include <cstdint>
#include <string>
#include <vector>

#include "core/rope_scaling.h"

namespace poslens {

enum class NormType { RMSNorm, LayerNorm };
enum class MlpType { Gated, Plain };  // Gated: down(act(gate(x)) * up(x)) (SwiGLU); Plain: down(act(up(x)))
enum class Activation { SiLU, GeluNew, GeluExact };
/// Components: the list in ModelConfig::pe_components (the PosLens format) decides.
enum class PositionKind { None, LearnedAbsolute, Rotary, Components };
/// RoPE pairing convention (SPEC.md §2): which dimensions form a rotated 2-D pair.
///  Interleaved: (2c, 2c+1) — GPT-J, Meta, llama2.c.   HalfSplit: (c, c + rotary_dim/2) — HF rotate_half.
enum class RopePairing { Interleaved, HalfSplit };

/// One position-encoding component of the PosLens format (docs/poslens-format.md): its type
/// ("rope", "cope", "t5", ...) and its parameters, the JSON object text from config.json, which
/// the component parses itself (pe_components.cpp).
struct PositionComponentSpec {
  std::string type;
  std::string params_json = "{}";
};

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

  PositionKind position = PositionKind::Rotary;
  double rope_theta = 10000.0;
  RopePairing rope_pairing = RopePairing::Interleaved;
  int64_t rotary_dim = 0;  ///< dims rotated per head (== d_head unless partial rotary)
  RopeScaling rope_scaling;  ///< HF `rope_scaling` (type "default": plain RoPE)
  /// position == Components: the encoding's parts, in config order.
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

  /// Throws poslens::Error naming the first inconsistent field (e.g. n_heads not divisible by
  /// n_kv_heads, d_head odd with rotary, a non-positive size).
  void validate() const;
  /// attn_scale, or 1/sqrt(d_head) when it is 0.
  double attention_scale() const;
  /// The whole config as a JSON object string (written into HDF5 attributes and shown by info).
  std::string to_json() const;
};

const char* to_string(NormType);
const char* to_string(MlpType);
const char* to_string(Activation);
const char* to_string(PositionKind);
const char* to_string(RopePairing);

}  // namespace poslens
