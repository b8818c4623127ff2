#pragma once
// Supported checkpoint dialects: config parsing and weight tables, one file per architecture
// (arch_llama.cpp, arch_gpt2.cpp, arch_gpt_neox.cpp, arch_phi.cpp, arch_gemma.cpp,
// arch_olmo.cpp). Adding an architecture = one more file + one dispatch line.
#include <string>

#include "core/formats/llama2c.h"
#include "core/models/model_config.h"
#include "core/formats/tensor_source.h"
#include "core/models/weight_table.h"

namespace poslens {

/// Reads an HF `config.json` and returns the ModelConfig (format "huggingface").
/// Supported `architectures[0]`: LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM,
/// GPT2LMHeadModel, GPTNeoXForCausalLM, PhiForCausalLM, GemmaForCausalLM, OlmoForCausalLM
/// (or, without `architectures`, the matching `model_type`); and "model_type": "poslens"
/// (docs/poslens-format.md, format "poslens"). Throws poslens::Error naming the file and the
/// missing/invalid key, or the unknown architecture together with the supported list.
ModelConfig read_hf_config(const std::string& config_json_path);

/// The config a llama2.c header implies: RMSNorm eps 1e-5, gated SiLU MLP, RoPE interleaved
/// with rope_theta 10000, tied embeddings when the classifier is shared, bos_token_id 1,
/// n_ctx = seq_len.
ModelConfig llama2c_config(const Llama2cHeader& header);

/// The weight table for `config` (its architecture decides the dialect). `source` is consulted
/// only to detect a name prefix (GPT-2 files with or without "transformer.").
WeightTable weight_table_for(const ModelConfig& config, const TensorSource& source);

}  // namespace poslens
