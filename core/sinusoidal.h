#pragma once
// Fixed sinusoidal position embeddings (Vaswani et al. 2017; SPEC.md §2 "Sinusoidal absolute").
// Also the relative-distance table R of Transformer-XL (transformer_xl.h), which uses the same
// frequencies in a different layout.
#include <cstdint>

#include <ATen/core/Tensor.h>

namespace poslens {

/// How the sin and cos halves of a sinusoidal embedding are laid out over d_model.
enum class SinusoidalLayout {
  /// Vaswani: P[j, 2k] = sin(j·w_k), P[j, 2k+1] = cos(j·w_k).
  Interleaved,
  /// kimiyoung/transformer-xl `PositionalEmbedding`: [sin(j·w_0..w_{d/2-1}) | cos(j·w_0..)].
  Concatenated,
};

/// w_k = 10000^(-2k/d_model), k = 0..d_model/2-1, float64 [d_model/2] (radians per position).
/// Throws poslens::Error if d_model is not even and positive.
at::Tensor sinusoidal_frequencies(int64_t d_model);

/// Sinusoidal embeddings of arbitrary (possibly fractional or negative) positions.
/// positions: any real or integer dtype, shape [n]. Returns float32 [n, d_model], computed in
/// float64 and cast at the end, on positions' device.
/// Throws poslens::Error if d_model is not even and positive or positions is not 1-D.
at::Tensor sinusoidal_embedding(const at::Tensor& positions, int64_t d_model,
                                SinusoidalLayout layout = SinusoidalLayout::Interleaved);

/// The Vaswani absolute table for positions 0..n_pos-1: float32 [n_pos, d_model],
///   P[j, 2k] = sin(j / 10000^(2k/d_model)),  P[j, 2k+1] = cos(j / 10000^(2k/d_model)).
/// Throws poslens::Error if n_pos < 0 or d_model is not even and positive.
at::Tensor sinusoidal_table(int64_t n_pos, int64_t d_model);

}  // namespace poslens
