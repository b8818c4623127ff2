#pragma once
// Fixed sinusoidal position embeddings (Vaswani et al. 2017; docs/formulas.md §2 "Sinusoidal absolute").
// Also the relative-distance table R of Transformer-XL (transformer_xl.h), which uses the same
// frequencies in a different layout.
#include <cstdint>

#include <ATen/core/Tensor.h>

#include "core/position/components.h"

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

/// Test references (not on the runtime path): a second, direct form of a formula the runtime
/// computes elsewhere, kept so tests can check the runtime against it. Never call from core.
namespace reference {
/// The Vaswani absolute table for positions 0..n_pos-1: float32 [n_pos, d_model],
///   P[j, 2k] = sin(j / 10000^(2k/d_model)),  P[j, 2k+1] = cos(j / 10000^(2k/d_model)).
/// Throws poslens::Error if n_pos < 0 or d_model is not even and positive.
at::Tensor sinusoidal_table(int64_t n_pos, int64_t d_model);
}  // namespace reference

/// Vaswani sinusoidal embeddings added to the tokens: P[j, 2k] = sin(j·w_k), P[j, 2k+1] =
/// cos(j·w_k), w_k = 10000^(-2k/d_model) (sinusoidal.h). No weights; any length.
class SinusoidalEncoding : public PositionEncoding {
 public:
  /// Throws poslens::Error if d_model is not even and positive.
  explicit SinusoidalEncoding(int64_t d_model);
  std::string describe() const override;
  /// P[positions] in tok's dtype, broadcast to tok [batch, pos, d_model].
  InputTerm input_term(const at::Tensor& tok, const at::Tensor& positions) const override;
  bool has_input_term() const override { return true; }
  at::Tensor position_table(int64_t n_pos) const override;

 private:
  int64_t d_model_;
};

/// The "sinusoidal" component of the PosLens format (docs/poslens-format.md): its parameters,
/// weights (with their initialisation) and checks.
ComponentRecipe sinusoidal_recipe(const PositionComponentSpec& spec, const PositionContext& c);

}  // namespace poslens
