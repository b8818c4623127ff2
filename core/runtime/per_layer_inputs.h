#pragma once
// Internal to the runtime: the per-layer inputs of Gemma 4 (HF Gemma4TextModel's "PLE",
// get_per_layer_inputs / project_per_layer_inputs of transformers 5.17), made one layer at a
// time so a forward never holds the [batch, pos, n_layers, P] tensor HF builds.
#include <ATen/core/Tensor.h>

#include "core/models/model_config.h"
#include "core/models/model_weights.h"

namespace poslens {

class PerLayerInputs {
 public:
  /// `ids` int64 [batch, pos] on the model's device; `embedded` the scaled token embedding
  /// [batch, pos, d_model] (HF inputs_embeds), kept by reference count until this is destroyed.
  PerLayerInputs(const ModelConfig& c, const ModelWeights& w, at::Tensor ids, at::Tensor embedded);

  /// Layer `l`'s input e_l [batch, pos, P] (P = ModelConfig::per_layer_input_width), in the
  /// model's dtype: (RMSNorm(x₀ W_lᵀ · d_model^−1/2) + E[id, lP:(l+1)P] · √P) · 2^−1/2, W_l the rows
  /// lP:(l+1)P of per_layer_model_projection, the norm per_layer_projection_norm's over P values,
  /// √P rounded to the dtype first (HF Gemma4TextScaledWordEmbedding).
  at::Tensor layer(int64_t l) const;

 private:
  const ModelConfig& c_;
  const ModelWeights& w_;
  at::Tensor ids_, embedded_;
};

/// Layer `l`'s per-layer sublayer on its output `x` [batch, pos, d_model] (HF
/// Gemma4TextDecoderLayer after the MLP): x + RMSNorm(per_layer_projection(gelu(per_layer_gate(x))
/// ⊙ e_l)) with the model's activation and per_layer_norm's gain.
at::Tensor add_per_layer_input(const ModelConfig& c, const LayerWeights& w, const at::Tensor& x,
                               const at::Tensor& per_layer_input);

}  // namespace poslens
