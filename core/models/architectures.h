#pragma once
// Supported checkpoint dialects: config parsing and weight tables, one file per architecture
// (arch_llama.cpp, arch_gpt2.cpp, arch_gpt_neox.cpp, arch_phi.cpp, arch_gemma.cpp,
// arch_olmo.cpp, arch_bloom.cpp, arch_mpt.cpp, arch_cohere.cpp, arch_bert.cpp, arch_nanogpt.cpp, …). Adding an
// architecture = one more file + one registry line (architectures.cpp).
#include <string>

#include "core/formats/llama2c.h"
#include "core/models/model_config.h"
#include "core/formats/tensor_source.h"
#include "core/models/weight_table.h"

namespace poslens {

/// Reads an HF `config.json` and returns the ModelConfig (format "huggingface").
/// Supported `architectures[0]`: LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM,
/// Qwen3ForCausalLM, SmolLM3ForCausalLM, GPT2LMHeadModel, GPTNeoXForCausalLM, PhiForCausalLM,
/// GemmaForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM, Gemma4ForCausalLM,
/// Gemma4ForConditionalGeneration (its text stack), OlmoForCausalLM, Olmo2ForCausalLM,
/// Cohere2ForCausalLM, GptOssForCausalLM, MixtralForCausalLM, Phi3ForCausalLM,
/// Llama4ForCausalLM, Llama4ForConditionalGeneration (its text stack), ModernBertForMaskedLM, T5ForConditionalGeneration, MT5ForConditionalGeneration,
/// BloomForCausalLM, MptForCausalLM (MPTForCausalLM), BertForMaskedLM, BertForPreTraining,
/// RobertaForMaskedLM
/// (or, without `architectures`, the matching `model_type`); and "model_type": "poslens"
/// (docs/poslens-format.md, format "poslens"). Throws poslens::Error naming the file and the
/// missing/invalid key, or the unknown architecture together with the supported list.
ModelConfig read_hf_config(const std::string& config_json_path);

/// The config a llama2.c header implies: RMSNorm eps 1e-5, gated SiLU MLP, RoPE interleaved
/// with rope_theta 10000, tied embeddings when the classifier is shared, bos_token_id 1,
/// n_ctx = seq_len.
ModelConfig llama2c_config(const Llama2cHeader& header);

class TorchZipFile;
/// True when a torch.save archive is a nanoGPT training checkpoint (its pickle has
/// model_args.n_layer and model_args.n_embd).
bool is_nanogpt_checkpoint(const TorchZipFile& zip);
/// The config of a nanoGPT ckpt.pt from its model_args (format and architecture "nanoGPT"):
/// GPT-2's block with exact GELU, LayerNorm eps 1e-5, biases per model_args.bias, tied head.
/// Throws poslens::Error naming the file and the missing model_args key.
ModelConfig nanogpt_config(const TorchZipFile& zip);

/// The weight table for `config` (its architecture decides the dialect). `source` is consulted
/// only to detect a name prefix (GPT-2 files with or without "transformer.").
WeightTable weight_table_for(const ModelConfig& config, const TensorSource& source);

}  // namespace poslens
