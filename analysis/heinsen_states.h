#pragma once
// Heinsen's position states (Heinsen 2024, eqs. 1–3): per position-encoding feature, the state s_i
// over the input, beside the decay probabilities p_i and the logits h_i that update it —
// s_i = log(p_i·exp(s_{i−1}) + exp(h_i)), s_0 = 0 (core/position/heinsen.h). PosLens models
// apply the encoding once, to the token embeddings (one set of states, not one per layer).
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "analysis/progress.h"
#include "core/runtime/checkpoint.h"

namespace poslens {

struct HeinsenStates {
  at::Tensor state;   ///< float64 [pos, d_pe]: s_i (hook_pe_state)
  at::Tensor decay;   ///< float64 [pos, d_pe]: p_i = sigmoid(W_p x_i + b_p), how much of s_{i−1} is kept
  at::Tensor logits;  ///< float64 [pos, d_pe]: h_i = W_h x_i + b_h, what token i adds (log scale)
};

/// One forward pass of `model` over `ids` (a batch of one) keeping hook_embed and hook_pe_state:
/// O(T · (d_model + d_pe)). Throws poslens::Error for a model without a Heinsen component,
/// empty or bad ids.
HeinsenStates compute_heinsen_states(const LoadedModel& model, const std::vector<int64_t>& ids);

}  // namespace poslens
