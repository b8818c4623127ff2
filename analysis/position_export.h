#pragma once
// HDF5 and CSV files of the position-only analyses (docs/position-maps.md): what
// `poslens-cli position-map` and `heads` write, with the exact names other tools read.
#include <string>

#include "analysis/head_metrics.h"
#include "analysis/position_map.h"
#include "core/formats/hdf5_export.h"

namespace poslens {

/// `/analysis/position_map` and `/analysis/pattern` float32 [layer, head, q_pos, k_pos] (row-max
/// normalised, 0 where masked; attribute `methods`, one per layer, and `explanation`);
/// `/analysis/cope/` (mean_gate_per_key [layer, head, k_pos], mean_gate_per_token [layer, head,
/// token_type], token_ids, token_counts [token_type]) for CoPE models;
/// `/analysis/absolute_terms/` (token_token, token_position, position_token,
/// position_position, bias [head, q_pos, k_pos], layer 0) for absolute models; `/tokens`.
void write_position_map_hdf5(const std::string& path, const PositionMapResult& r,
                             const ExportMetadata& meta);

/// `/analysis/heads/values` float64 [layer, head, metric] (attribute `methods`, the position
/// method per layer) with `/analysis/heads/metrics` (names); `/tokens` from `ids`, `labels`.
void write_head_metrics_hdf5(const std::string& path, const HeadMetrics& m,
                             const std::vector<int64_t>& ids, const std::vector<std::string>& labels,
                             const std::vector<std::string>& methods, const ExportMetadata& meta);

/// One row per (layer, head): `layer,head,entropy,mean_distance,sink,previous_token,
/// position_share` (empty where NaN). Written to a temporary and renamed. Throws poslens::Error.
void write_head_metrics_csv(const std::string& path, const HeadMetrics& m);

}  // namespace poslens
