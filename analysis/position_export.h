#pragma once
// HDF5 and CSV files of the position-only analyses (docs/position-maps.md): what
// `poslens-cli position-map` and `heads` write, with the exact names other tools read.
#include <optional>
#include <set>
#include <string>

#include "analysis/heads.h"
#include "analysis/position_map.h"
#include "core/formats/hdf5_export.h"
#include "core/formats/hdf5_reader.h"

namespace poslens {

/// position_map()'s output streamed into an HDF5 file as it is made (docs/position-maps.md):
///   /analysis/position_map, /analysis/pattern — float32 [layer, head, q_pos, k_pos], rows
///     scaled to max 1, 0 where masked; written for the selected heads only (attribute `heads`,
///     "L.H" strings; the other heads read 0 and take no space). With `pool` > 0, max-pooled to
///     [layer, head, q_block, k_block] (attributes pooling "max", pool_stride, source_length;
///     NaN where every entry is hidden and for heads not selected). Attributes `methods` (one
///     per layer) and `explanation` on /analysis/position_map.
///   /analysis/absolute_terms/<term> — [head, q_pos, k_pos] of layer 0 (absolute models;
///     token_token, token_position, position_token, position_position, bias), same pooling.
///   /analysis/sink_share — float32 [layer, head, q_pos] (pooled: [layer, head, q_block], the
///     max of each block), models with learned sinks (gpt-oss): 1 − Σ_j p_ij, the sink's share
///     of each query row (PositionMapKind::SinkShare); attribute `meaning`.
///   /analysis/cope/ — mean_gate_per_key [layer, head, k_pos], mean_gate_per_token [layer,
///     head, token_type], token_ids, token_counts [token_type] (CoPE models).
///   /tokens.
/// Nothing appears at `path` until finish(); destroyed before, it leaves nothing.
class PositionMapFile {
 public:
  /// For `model` on a T-token input. Throws poslens::Error when the folder does not exist.
  PositionMapFile(const std::string& path, const LoadedModel& model, int64_t T,
                  const std::optional<HeadSelection>& heads, int64_t pool);
  /// The consumer for position_map().
  void add(const PositionMapBlock& block);
  /// Writes the counting, attributes and tokens of `result`, then commits the file.
  void finish(const PositionMapResult& result);
  /// Bytes the maps of `method`'s model will take on disk at most (uncompressed), for a check
  /// before the job starts.
  static int64_t estimate_bytes(const ModelConfig& config, int64_t T,
                                const std::optional<HeadSelection>& heads, int64_t pool,
                                const std::string& method);

 private:
  Hdf5Writer file_;
  const ModelConfig& config_;
  std::vector<std::string> methods_;
  std::string explanation_;
  int64_t T_, pool_;
  std::optional<HeadSelection> heads_;
  std::optional<PooledPositionMaps> pooled_;
  std::set<std::string> created_;
};

/// One head's maps of a file PositionMapFile wrote: the position-only map and the pattern,
/// float32 [rows, cols] (pooled or T × T, NaN or 0 where hidden, as written), the learned sink's
/// share of each row [rows] (undefined when the file has none), the source length T, the heads
/// written ("L.H"), the position method of the head's layer and the explanation.
struct PositionMapHead {
  int layer = 0, head = 0;
  int64_t source_length = 0;
  at::Tensor position, pattern, sink_share;
  std::vector<std::string> heads;
  std::string method, explanation;
};

/// Reads head (`layer`, `head`) of `/analysis/position_map` and `/analysis/pattern`, or the first
/// head the file's `heads` attribute names when `layer` < 0. Throws poslens::Error naming the
/// file for another version's file, a missing pattern, maps of different or non-4-D shapes, a
/// sink_share whose shape does not fit them, or a head outside them.
PositionMapHead read_position_map_hdf5(const Hdf5Reader& file, int layer = -1, int head = -1);

/// `/analysis/heads/values` float64 [layer, head, metric] (attribute `methods`, the position
/// method per layer) with `/analysis/heads/metrics` (names); `/tokens` from `ids`, `labels`.
void write_head_metrics_hdf5(const std::string& path, const HeadMetrics& m,
                             const std::vector<int64_t>& ids, const std::vector<std::string>& labels,
                             const std::vector<std::string>& methods, const ExportMetadata& meta);

/// What write_head_metrics_hdf5 wrote: values (float64) and induction_ids. Throws
/// poslens::Error naming the file for another PosLens version's file, metrics other than
/// head_metric_names() or a values shape that does not fit.
HeadMetrics read_head_metrics_hdf5(const Hdf5Reader& file);

/// head_metrics_csv() of `m`, written atomically. Throws poslens::Error.
void write_head_metrics_csv(const std::string& path, const HeadMetrics& m);

}  // namespace poslens
