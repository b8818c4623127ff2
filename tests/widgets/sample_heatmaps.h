#pragma once
// Small, deterministic maps for the widget tests and screenshots.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "analysis/heatmap_data.h"

namespace poslens::test_data {

/// A causal attention pattern over `tokens`: row q attends to keys 0..q with weights
/// proportional to exp(-0.7 (q - k)) plus a sink on key 0; keys after q are masked (NaN).
/// Every row sums to 1 over its unmasked keys.
inline HeatmapData causalPattern(const std::vector<std::string>& tokens,
                                 const std::string& title = "L0 H0 pattern") {
  const auto n = static_cast<int64_t>(tokens.size());
  HeatmapData d;
  d.rows = d.cols = d.source_rows = d.source_cols = n;
  d.values.assign(static_cast<std::size_t>(n * n), std::numeric_limits<float>::quiet_NaN());
  for (int64_t q = 0; q < n; ++q) {
    double sum = 0;
    std::vector<double> w(static_cast<std::size_t>(q + 1));
    for (int64_t k = 0; k <= q; ++k) {
      w[static_cast<std::size_t>(k)] = std::exp(-0.7 * static_cast<double>(q - k)) + (k == 0 ? 1.0 : 0.0);
      sum += w[static_cast<std::size_t>(k)];
    }
    for (int64_t k = 0; k <= q; ++k)
      d.values[static_cast<std::size_t>(q * n + k)] = static_cast<float>(w[static_cast<std::size_t>(k)] / sum);
  }
  d.row_labels = d.col_labels = tokens;
  d.title = title;
  d.value_name = "weight";
  d.kind = HeatmapKind::Probability;
  return d;
}

inline std::vector<std::string> storyTokens() {
  return {"Once", " upon", " a", " time", ","};
}

/// `n` tokens "t0", "t1", ...
inline std::vector<std::string> numberedTokens(int64_t n) {
  std::vector<std::string> t;
  for (int64_t i = 0; i < n; ++i) t.push_back("t" + std::to_string(i));
  return t;
}

/// A map of `source` x `source` positions as if max-pooled to `shown` x `shown` cells
/// (cell (r, c) holds (r + 2c) / (3 shown), no masking), with one label per source position.
inline HeatmapData pooledMap(int64_t source, int64_t shown) {
  HeatmapData d;
  d.rows = d.cols = shown;
  d.source_rows = d.source_cols = source;
  d.values.resize(static_cast<std::size_t>(shown * shown));
  for (int64_t r = 0; r < shown; ++r)
    for (int64_t c = 0; c < shown; ++c)
      d.values[static_cast<std::size_t>(r * shown + c)] =
          static_cast<float>(static_cast<double>(r + 2 * c) / (3.0 * static_cast<double>(shown)));
  d.row_labels = d.col_labels = numberedTokens(source);
  d.title = "pooled";
  d.value_name = "weight";
  d.kind = HeatmapKind::Probability;
  return d;
}

/// A `rows` x `cols` map with every cell equal to `value`.
inline HeatmapData constantMap(int64_t rows, int64_t cols, float value,
                               const std::string& value_name = "weight") {
  HeatmapData d;
  d.rows = d.source_rows = rows;
  d.cols = d.source_cols = cols;
  d.values.assign(static_cast<std::size_t>(rows * cols), value);
  d.value_name = value_name;
  d.kind = value_name == "weight" ? HeatmapKind::Probability : HeatmapKind::Value;
  return d;
}

}  // namespace poslens::test_data
