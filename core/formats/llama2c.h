#pragma once
// llama2.c checkpoints (karpathy/llama2.c, legacy "v0" export of run.c).
// Layout: 7 little-endian int32 `dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size,
// seq_len` (vocab_size < 0: the classifier is stored separately, unshared), then float32
// weights in run.c's order: token_embedding [vocab, dim]; rms_att [L, dim]; wq [L, dim, dim];
// wk [L, kv_dim, dim]; wv [L, kv_dim, dim]; wo [L, dim, dim]; rms_ffn [L, dim];
// w1 [L, hidden, dim]; w2 [L, dim, hidden]; w3 [L, hidden, dim]; rms_final [dim];
// freq_cis_real [seq_len, d_head/2]; freq_cis_imag [seq_len, d_head/2]; wcls [vocab, dim] if
// unshared. kv_dim = dim * n_kv_heads / n_heads. Linear weights are [out, in].
#include <cstdint>
#include <memory>
#include <string>

#include "core/formats/tensor_source.h"

namespace poslens {

/// A validated llama2.c .bin, memory-mapped. Tensors are exposed per layer under the names of
/// llama2.c's model.py (Meta's naming): tok_embeddings.weight, layers.{L}.attention_norm.weight,
/// layers.{L}.attention.wq.weight, .wk, .wv, .wo, layers.{L}.ffn_norm.weight,
/// layers.{L}.feed_forward.w1.weight, .w2, .w3, norm.weight, and output.weight when unshared.
/// The RoPE tables are skipped (recomputed by the runtime).
/// Throws poslens::Error for: a file shorter than the header, non-positive or absurd header
/// fields (each must be <= 1<<20, n_heads divisible by n_kv_heads, dim by n_heads), a file size
/// that differs from the one the header implies (with expected and actual byte counts).
/// The seven header fields, validated; vocab_size made positive.
struct Llama2cHeader {
  int64_t dim = 0, hidden_dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, vocab_size = 0,
          seq_len = 0;
  bool shared_classifier = true;  ///< the stored vocab_size was positive: no output.weight
};

class Llama2cFile : public TensorSource {
 public:
  /// Opens, validates (header first, then the exact file size) and memory-maps `path`
  /// (read-only). Error messages start with `path`.
  explicit Llama2cFile(const std::string& path);
  ~Llama2cFile() override;
  /// Every exposed tensor in file order (all F32): tok_embeddings.weight [vocab, dim], then each
  /// kind for layers 0..L-1 (attention_norm [dim], wq [dim, dim], wk/wv [kv_dim, dim],
  /// wo [dim, dim], ffn_norm [dim], w1/w3 [hidden_dim, dim], w2 [dim, hidden_dim]),
  /// norm.weight [dim], output.weight [vocab, dim] when unshared.
  const std::vector<TensorInfo>& tensors() const override;
  /// A float32 CPU tensor aliasing the read-only map (torch::from_blob, no copy): valid while
  /// this object lives and must not be written to (clone first). Throws poslens::Error for a
  /// name not in tensors() (the RoPE tables are not offered).
  at::Tensor load(const std::string& name) const override;
  /// The path as given to the constructor.
  std::string describe() const override;
  /// The validated header (models/arch_llama2c.cpp turns it into a ModelConfig).
  const Llama2cHeader& header() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace poslens
