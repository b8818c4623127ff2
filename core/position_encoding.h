#pragma once
// Position encodings as components (ARCHITECTURE.md): a block asks its encoding to act at the
// few places where position enters a transformer. This version has the two that real
// checkpoints of the first formats use (rope.h, learned_absolute.h); the other methods of
// SPEC.md §2 plug into the same interface.
#include <memory>
#include <string>

#include <ATen/core/Tensor.h>

#include "core/model_config.h"
#include "core/model_weights.h"

namespace poslens {

class PositionEncoding {
 public:
  virtual ~PositionEncoding() = default;
  /// Human-readable name with parameters, e.g. "RoPE (interleaved pairs, rope_theta=10000)".
  virtual std::string describe() const = 0;

  /// Absolute encodings: the term added to the token embeddings, [pos, d_model] for
  /// `positions` (int64 [pos]); undefined tensor when the encoding adds nothing.
  virtual at::Tensor embedding(const at::Tensor& positions) const {
    (void)positions;
    return {};
  }

  /// Rotary encodings: true when rotate() changes q/k (so hook_rot_q/hook_rot_k exist).
  virtual bool rotates() const { return false; }
  /// Rotates `x` [batch, pos, head, d_head] by its positions (int64 [pos]). Identity by default.
  virtual at::Tensor rotate(const at::Tensor& x, const at::Tensor& positions) const {
    (void)positions;
    return x;
  }
};

/// The encoding a config selects. Throws poslens::Error if a weight it needs is missing.
std::unique_ptr<PositionEncoding> make_position_encoding(const ModelConfig& config,
                                                         const ModelWeights& weights);

}  // namespace poslens
