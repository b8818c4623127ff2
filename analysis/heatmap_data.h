#pragma once
// A small value type for one 2-D map (an attention head's pattern, a position-only map, ...)
// that crosses from the inference thread to the GUI. Plain std types only: no LibTorch, no Qt.
#include <cstdint>
#include <string>
#include <vector>

namespace poslens {

/// What the values of a map are; views pick the colour range from it (widgets/color_scale.h
/// autoColorRange), so a probability map is always drawn on [0, 1] whatever its data range.
enum class HeatmapKind {
  Value,        ///< any real value: the finite data range
  Probability,  ///< attention weights in [0, 1]: always [0, 1]
  Logit,        ///< pre-softmax scores: the finite data range
  Signed,       ///< values around 0 (position scores, differences): symmetric [-m, m]
  Gate,         ///< CoPE gates, sigmoid outputs in [0, 1]: always [0, 1]
  Position,     ///< CoPE contextual positions (>= 0): [0, max]
};

struct HeatmapData {
  int64_t rows = 0;                     ///< query positions shown (after pooling)
  int64_t cols = 0;                     ///< key positions shown (after pooling)
  std::vector<float> values;            ///< row-major [rows, cols]; NaN marks masked cells
  int64_t source_rows = 0;              ///< positions before pooling (== rows when not pooled)
  int64_t source_cols = 0;
  /// The source position of the first row / column: 0 for a whole map, the corner of a region
  /// recomputed at full resolution when a view zooms in (HeatmapView::setDetail).
  int64_t row_offset = 0;
  int64_t col_offset = 0;
  std::vector<std::string> row_labels;  ///< one per source row (token text), may be empty
  std::vector<std::string> col_labels;  ///< one per source column, may be empty
  /// The token id and raw vocabulary piece ("Ġthe", "▁the", "<0x0A>") of each source position,
  /// for the hover read-out; may be empty. Rows and columns are the same tokens.
  std::vector<int64_t> token_ids;
  std::vector<std::string> token_pieces;
  std::string title;                    ///< e.g. "L2 H5 pattern"
  /// Axis titles; empty: "query position" (rows) and "key position" (columns). Maps that are
  /// not attention maps (head × frequency, layer × head) name their own.
  std::string row_axis, col_axis;
  std::string value_name;               ///< label of the colour scale, e.g. "weight"
  HeatmapKind kind = HeatmapKind::Value;  ///< picks the default colour range
  int layer = -1;
  int head = -1;

  bool pooled() const { return rows != source_rows || cols != source_cols; }
  float at(int64_t r, int64_t c) const { return values[static_cast<std::size_t>(r * cols + c)]; }
};

}  // namespace poslens
