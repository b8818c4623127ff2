#pragma once
// Opening a checkpoint of any supported format: detection, config, weights, tokenizer.
//  - llama2.c `.bin` (legacy v0) with its tokenizer.bin beside it
//  - a `.safetensors` file with config.json beside it
//  - an HF folder: config.json + model.safetensors, pytorch_model.bin or their sharded index.json
#include <memory>
#include <string>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include "core/models/model_config.h"
#include "core/models/weight_table.h"
#include "core/tokenizers/tokenizer.h"
#include "core/runtime/transformer.h"

namespace poslens {

struct LoadOptions {
  std::string device = "auto";   ///< "cpu", "cuda", "cuda:N" or "auto" (CUDA when available)
  std::string dtype = "float32"; ///< "float32", "bfloat16" or "float16"
  std::string tokenizer;         ///< explicit tokenizer path; empty: look beside the checkpoint
  /// Called per stored tensor with (loaded, total); return false to cancel the load, which
  /// makes load_checkpoint throw poslens::Cancelled (the GUI's Cancel while opening).
  LoadProgressFn progress;
};

struct LoadedModel {
  std::string path;          ///< the checkpoint as given
  std::string format;        ///< "llama2.c", "safetensors", "huggingface (sharded safetensors)", "huggingface (sharded PyTorch zip)"
  std::string stored_dtype;  ///< dtype(s) of the stored tensors, e.g. "F32" or "BF16"
  int64_t n_params = 0;
  std::unique_ptr<Transformer> model;
  std::unique_ptr<Tokenizer> tokenizer;  ///< null when no supported tokenizer was found
  std::string tokenizer_note;            ///< why there is none, for messages
  /// The files the weights were read from (a sharded checkpoint: its shards in index order).
  std::vector<std::string> weight_files;
  /// SHA-256 of those files' bytes, read one after the other (sha256_of_files(): one file's is
  /// what `sha256sum` prints), lower-case hex; every analysis file records it.
  std::string weights_sha256;
};

/// Resolves "auto"/"cpu"/"cuda[:N]". Throws poslens::Error for an unknown name or for CUDA
/// when this LibTorch has no CUDA device.
c10::Device parse_device(const std::string& name);
/// "float32"/"bfloat16"/"float16" (also "fp32", "bf16", "fp16"). Throws poslens::Error otherwise.
c10::ScalarType parse_dtype(const std::string& name);
std::string dtype_name(c10::ScalarType dtype);

/// Multi-line "key: value" description of a loaded model (format, architecture, position
/// encoding, d_model, n_layers, n_heads, n_kv_heads, d_head, vocab, parameters, dtypes,
/// tokenizer), as shown by `poslens-cli info` and the GUI's model panel.
std::string describe(const LoadedModel& model);

/// Opens and validates `path` (file or folder), loads the weights onto the requested device and
/// dtype and finds the tokenizer. Throws poslens::Error with the file and the problem for a
/// missing or unreadable file, an unknown format or architecture, a truncated, corrupted or
/// hostile file, or a wrong tensor shape.
LoadedModel load_checkpoint(const std::string& path, const LoadOptions& options = {});

}  // namespace poslens
