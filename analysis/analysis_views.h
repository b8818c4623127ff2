#pragma once
// What the views (the GUI panels and the CLI's --figure) draw of the frequency-usage and
// pattern-divergence analyses: plain HeatmapData, so the GUI and the CLI draw the same maps.
#include <string>
#include <utility>
#include <vector>

#include "analysis/frequency_usage.h"
#include "analysis/heatmap_data.h"
#include "analysis/pattern_divergence.h"

namespace poslens {

/// Layer `layer`'s mean ‖q⁽ᶜ⁾‖ as a head × component map, and the layer × component map of the
/// head means. Columns are labelled "c<i> <tags> θ_c" with the RoPE landmarks at the training
/// length (rope_markers_data.h): A (activated band), C (the first component past Liu et al.'s
/// critical dimension), Y (YaRN's 1–32-turn ramp). Throws poslens::Error for a layer out of range.
std::pair<HeatmapData, HeatmapData> frequency_usage_maps(const FrequencyUsage& u, int layer,
                                                         const std::string& title);

/// The per-head JS divergence as a layer × head map, and the head-mean divergence at each
/// query position as a layer × position map (`labels`: one per token, may be empty).
std::pair<HeatmapData, HeatmapData> divergence_maps(const PatternDivergence& d,
                                                    const std::vector<std::string>& labels,
                                                    const std::string& title);

}  // namespace poslens
