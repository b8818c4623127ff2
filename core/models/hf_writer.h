#pragma once
// Writes a loaded Llama-family model as an HF LlamaForCausalLM folder (config.json +
// model.safetensors, float32). Used by `poslens-cli convert` and the parity tests.
#include <string>

#include <ATen/core/Tensor.h>

#include "core/models/model_config.h"
#include "core/models/model_weights.h"

namespace poslens {

/// The HF q/k permutation (transformers' convert_llama_weights_to_hf `permute`): reorders the
/// rows of each head of `w` [n_heads*d_head, d_model] from interleaved pairs (2c, 2c+1) to
/// half-split pairs (c, c+d_head/2), so that HF's rotate_half computes the same rotation.
at::Tensor permute_interleaved_to_half_split(const at::Tensor& w, int64_t n_heads);

/// Writes the model `config` + `weights` (RMSNorm, gated SiLU MLP, RoPE) to folder `dir`, which must not exist yet;
/// it is assembled in a temporary sibling and renamed, so a failure leaves nothing behind.
/// Throws poslens::Error for another architecture (e.g. LayerNorm/GELU models) or I/O errors.
void write_hf_llama(const std::string& dir, const ModelConfig& config, const ModelWeights& weights);

}  // namespace poslens
