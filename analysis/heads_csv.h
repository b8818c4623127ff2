#pragma once
// The head metrics as CSV, written once here so the CLI (`heads --out x.csv`) and the GUI
// (Heads panel ▸ Export… ▸ CSV) produce the same file. Plain std types: the GUI includes this
// without LibTorch.
#include <cstdint>
#include <string>
#include <vector>

namespace poslens {

/// Metric names, in the order of HeadMetrics::values' last axis (heads.h).
const std::vector<std::string>& head_metric_names();

/// `layer,head,entropy,mean_distance,sink,previous_token,position_share` and one row per
/// (layer, head) from `values` [(layer · n_heads + head) · metrics + metric] (metrics =
/// head_metric_names().size()), numbers with 9 significant digits, empty where NaN.
std::string head_metrics_csv(int64_t n_layers, int64_t n_heads, const std::vector<double>& values);

}  // namespace poslens
