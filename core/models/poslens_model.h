#pragma once
// PosLens-format models as something to create, train and save: the inverse of the reader
// (docs/poslens-format.md), parameters by stored name, initialisation from scratch.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "core/models/model_config.h"
#include "core/models/model_weights.h"

namespace poslens {

/// The config.json text of a PosLens-format model: exactly the keys the reader accepts, so it
/// loads again to an equal config (also what `poslens-cli info --json` prints for one).
/// Throws poslens::Error for a model of another format.
/// `indent` as nlohmann::json::dump (-1: one line).
std::string poslens_config_json(const ModelConfig& config, int indent = -1);

/// Every trainable tensor of a PosLens-format model under its stored name (the weight table's
/// names: tok_embed.weight, blocks.0.attn.q_proj.weight, blocks.0.attn.pe.cope_pos_emb, ...),
/// in table order. These are the model's own tensors (same storage): set requires_grad on them
/// and hand them to an optimiser. A tied unembedding appears once, as tok_embed.weight.
/// Throws poslens::Error for a model of another format.
std::vector<std::pair<std::string, at::Tensor>> named_parameters(const ModelConfig& config,
                                                                 const ModelWeights& weights);

/// Writes a PosLens-format model as folder `dir` (config.json + model.safetensors, the tensors
/// in their current dtype), atomically (model_folder.h). Loading it gives identical logits.
/// Throws poslens::Error for another format, an existing `dir` or an I/O error.
void write_poslens_model(const std::string& dir, const ModelConfig& config,
                         const ModelWeights& weights);

/// Fresh weights for a PosLens-format config, float32 on the CPU, drawn from LibTorch's CPU
/// generator seeded with `seed` (the same seed gives the same weights). The block follows HF's
/// GPT-2/Llama initialisation (initializer_range 0.02: linear and embedding weights N(0, 0.02²),
/// norm weights 1, biases 0); every position component initialises its own weights as its
/// reference does (PeWeightSpec::init, documented in each method's file). Throws poslens::Error
/// for a model of another format.
ModelWeights initialize_weights(const ModelConfig& config, uint64_t seed);

}  // namespace poslens
