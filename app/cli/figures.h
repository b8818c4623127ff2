#pragma once
// The figures of `poslens-cli probe/frequencies/compare/position-map --figure`: the panels' own
// plots (widgets/frequency_plot.h, heatmap_view.h) drawn offscreen, so the CLI figure and the
// GUI look the same.
// Built only with the GUI (POSLENS_BUILD_GUI); without it each call throws poslens::Error
// saying so (the HDF5 output still has every number).
#include <string>

#include "analysis/curve_data.h"
#include "analysis/heatmap_data.h"
#include "analysis/position_map.h"
#include "analysis/compare.h"
#include "analysis/probe.h"
#include "analysis/text_decomposition.h"

namespace poslens::cli {

/// Layer `layer`'s head-mean probe curves and VAF (layer 0: the panel's default view), with the
/// extrapolation probe's overall curve over them when given. Format by suffix (.png, .pdf,
/// .svg). Throws poslens::Error for a layer out of range or when writing fails.
void write_probe_figure(const std::string& path, const ProbeResult& probe,
                        const std::string& checkpoint, const ProbeResult* extrapolation = nullptr,
                        int layer = 0);
/// The first head's last-query curves of the decomposition, VAF over its whole map.
void write_frequencies_figure(const std::string& path, const TextDecomposition& d,
                              const std::string& checkpoint);
/// VAF against step for layer `layer` with the last checkpoint's curves over every checkpoint's;
/// `difference`: every curve and VAF minus the first checkpoint's (FrequencyPlot::setDifference).
void write_compare_figure(const std::string& path, const CompareResult& compare, bool difference = false,
                          int layer = 0);

/// Head (`layer`, `head`)'s pattern and position-only map side by side, as the Position map
/// panel shows them: `pattern` and `position` max-pooled ([side, side], PooledPositionMaps) of a
/// map over `labels` (one per token); hidden cells grey. With `sink_share` ([side, 1], a learned
/// sink's share of each row, PositionMapKind::SinkShare) a narrow column between the two.
/// Throws poslens::Error when writing fails.
void write_position_figure(const std::string& path, const at::Tensor& pattern,
                           const at::Tensor& position, const std::vector<std::string>& labels,
                           int layer, int head, const std::string& method,
                           const std::string& checkpoint, const at::Tensor& sink_share = {});

/// Two maps side by side (the frequency-usage and divergence figures: analysis_views.h), titled
/// with both titles. Throws poslens::Error when writing fails.
void write_map_pair_figure(const std::string& path, const HeatmapData& left, const HeatmapData& right);
/// Maps side by side, any number (Heinsen's state, decay and logits).
void write_maps_figure(const std::string& path, const std::vector<HeatmapData>& maps);
/// Curves over one axis (widgets/curve_plot.h): the length-loss and massive-activation figures.
void write_curves_figure(const std::string& path, const CurveSet& curves);

}  // namespace poslens::cli
