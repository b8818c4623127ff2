#pragma once
// Reduce a captured map to a drawable size (heatmaps larger than the screen are pooled to the
// pixel grid before drawing).
#include <ATen/core/Tensor.h>

#include "analysis/heatmap_data.h"

namespace poslens {

enum class Pooling { Max, Mean };

/// `map` is a 2-D CPU or CUDA tensor [q_pos, k_pos] of any float dtype. If it is larger than
/// `max_rows` x `max_cols`, each output cell is the max (or mean) over a block of
/// ceil(q_pos/max_rows) x ceil(k_pos/max_cols) source cells (edge blocks are smaller);
/// masked cells (-inf or NaN) are ignored inside a block and a block with only masked cells is
/// NaN. -inf cells become NaN in the output either way. Labels are left empty (the caller fills
/// them). Throws poslens::Error if `map` is not 2-D or a limit is < 1.
HeatmapData pool_heatmap(const at::Tensor& map, int64_t max_rows, int64_t max_cols,
                         Pooling pooling = Pooling::Max);

/// A map already max-pooled (PooledMapSink, PooledPositionMaps: float [rows, cols], NaN where
/// every entry was hidden) as the views' HeatmapData of a `source_rows` × `source_cols` map.
/// Throws poslens::Error if `pooled` is not 2-D.
HeatmapData heatmap_from_pooled(const at::Tensor& pooled, int64_t source_rows, int64_t source_cols);

/// A learned sink's share of each query row (PositionMapKind::SinkShare, 1 − Σ_j p_ij; gpt-oss,
/// arXiv 2508.10925 §2.1), pooled to float [rows, 1] or [rows] from a `source_rows`-row map, as
/// the narrow column drawn beside a head's pattern: one column "sink", title "sink share",
/// axis "1 − Σ_j p_ij", values "share of the row" (HeatmapKind::Probability). Row labels, layer
/// and head are the caller's. Throws poslens::Error if `pooled` is not 1- or 2-D.
HeatmapData sink_share_heatmap(const at::Tensor& pooled, int64_t source_rows);

}  // namespace poslens
