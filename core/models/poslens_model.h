#pragma once
// PosLens-format models as something to create, train and save: the inverse of the reader
// (docs/poslens-format.md), parameters by stored name, initialisation from scratch.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "core/models/model_config.h"
#include "core/models/model_weights.h"

namespace poslens {

/// The config.json text of a PosLens-format model: exactly the keys the reader accepts, so it
/// loads again to an equal config (also what `poslens-cli info --json` prints for one).
/// Throws poslens::Error for a model of another format.
/// `indent` as nlohmann::json::dump (-1: one line).
std::string poslens_config_json(const ModelConfig& config, int indent = -1);

/// Reads PosLens config.json text (what poslens_config_json writes, or a hand-written one) into
/// a config with format "poslens". `where` names the source in messages. Throws poslens::Error
/// as read_hf_config does for a PosLens file (unknown key, missing size, bad component).
ModelConfig poslens_config_from_text(const std::string& json_text, const std::string& where);

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
/// `extra` (optional) writes more files into the folder before it appears (tokenizer.json,
/// optimizer state), with the folder's temporary path as argument.
void write_poslens_model(const std::string& dir, const ModelConfig& config,
                         const ModelWeights& weights,
                         const std::function<void(const std::string& folder)>& extra = {});

/// How the block's weights (embedding, projections, norms, unembedding) are drawn.
enum class BlockInit {
  Gpt2,     ///< HF GPT-2/Llama _init_weights (initializer_range 0.02): linear and embedding
            ///< weights N(0, 0.02²), norm weights 1, biases 0
  PyTorch,  ///< torch.nn defaults, as tools/poslens_reference.py builds a model: nn.Embedding
            ///< N(0, 1), nn.Linear weights and biases U(±1/√fan_in), norm weights 1, biases 0
};
/// "gpt2" / "pytorch"; Error otherwise.
BlockInit parse_block_init(const std::string& name);
const char* to_string(BlockInit init);

/// Fresh weights for a PosLens-format config, float32 on the CPU, drawn from LibTorch's CPU
/// generator seeded with `seed` (the same seed gives the same weights). The block follows
/// `block`; every position component initialises its own weights as its reference does
/// (PeWeightSpec::init, documented in each method's file). Throws poslens::Error for a model
/// of another format.
ModelWeights initialize_weights(const ModelConfig& config, uint64_t seed,
                                BlockInit block = BlockInit::Gpt2);

/// `weights` moved to `device` as float32 through the loader (same checks as a file), e.g. fresh
/// weights onto the GPU for training. Throws poslens::Error for a model of another format.
ModelWeights weights_on(const ModelConfig& config, const ModelWeights& weights, c10::Device device);

}  // namespace poslens
