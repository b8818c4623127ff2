#pragma once
// The position-offset intervention (docs/analyses.md): every position index shifted by Δ
// (ForwardOptions::position_offset), the patterns compared with Δ = 0 by their JS divergence —
// unchanged for relative methods (RoPE, ALiBi, T5, CoPE), changed for absolute ones. What
// `poslens-cli position-offset` computes.
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "analysis/divergence.h"
#include "analysis/progress.h"
#include "core/runtime/checkpoint.h"

namespace poslens {

/// The position-offset intervention on head (`layer`, `head`): the patterns of `model` on `ids`
/// at Δ = 0 and at Δ = `offset` (max-pooled to `cells` per side for the view) and the JS
/// divergence between them per head and query.
struct OffsetEffect {
  int64_t offset = 0;
  int layer = 0, head = 0;
  PatternDivergence divergence;  ///< Δ = 0 against Δ = offset
  at::Tensor pattern, shifted;   ///< float32 [cells', cells'] of the head, NaN where hidden
};
/// Throws poslens::Error for an offset < 0, a head outside the model, an absolute table that
/// ends before T + offset; poslens::Cancelled.
OffsetEffect position_offset_effect(const LoadedModel& model, const std::vector<int64_t>& ids, int64_t offset,
                                    int layer, int head, int64_t cells, const Progress& progress = {});

}  // namespace poslens
