#pragma once
// The per-frequency decomposition of one layer's real attention scores on the user's input
// (docs/formulas.md §3 "RoPE per-frequency decomposition"; Chen et al. 2024 eq. 4): the model runs once, and
// hook_q / hook_k of the layer are split into one score term per rotary component.
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "core/runtime/checkpoint.h"

namespace poslens {

struct TextDecomposition {
  int layer = 0;
  int head = -1;               ///< the one head kept, -1 for all
  int64_t L = 0;               ///< training length (activated band)
  std::string pairing;         ///< "interleaved" / "half_split"
  int64_t kept_components = 0; ///< HoPE's cut (= component count for RoPE)
  std::vector<int64_t> ids;    ///< the input, [pos]
  std::vector<std::string> labels;
  /// float32 [head, component, q_pos, k_pos] on the score scale (heads: all, or the one kept);
  /// 0 where the mask hides the key.
  at::Tensor components;
  at::Tensor remainder;        ///< [head, q_pos, k_pos] unrotated dims; undefined when none
  at::Tensor position_terms;   ///< [head, q_pos, k_pos] hook_pos_scores; undefined when none
  at::Tensor scores;           ///< [head, q_pos, k_pos] hook_attn_scores (−inf where masked)
  at::Tensor theta;            ///< float64 [component] effective θ_c
  at::Tensor activated;        ///< bool [component]
};

/// Runs `model` on `ids` and decomposes layer `layer`'s scores (all heads, or `head` >= 0).
/// Throws poslens::Error when the model does not rotate q and k (nothing to decompose: the
/// message names its position encoding), for a layer or head out of range, or when the whole
/// layer's decomposition (held in memory, not streamed: 4·T²·n_heads·(2·C + 4) bytes) would
/// not fit the available memory.
TextDecomposition decompose_text(const LoadedModel& model, const std::vector<int64_t>& ids,
                                 int layer, int head = -1, int64_t train_length = 0);

}  // namespace poslens
