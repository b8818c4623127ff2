#pragma once
// What the views (the GUI panels and the CLI's --figure) draw of the frequency-usage and
// pattern-divergence analyses: plain HeatmapData, so the GUI and the CLI draw the same maps.
#include <string>
#include <utility>
#include <vector>

#include "analysis/curve_data.h"
#include "analysis/frequency_usage.h"
#include "analysis/heatmap_data.h"
#include "analysis/heinsen_states.h"
#include "analysis/length_loss.h"
#include "analysis/position_offset.h"
#include "analysis/massive_activations.h"
#include "analysis/divergence.h"

namespace poslens {

/// A [rows, cols] tensor (any float dtype, any device) as a Value map with the given labels
/// (each may be empty), title and colour-scale name; float32 on the host.
HeatmapData tensor_heatmap(const at::Tensor& values, std::vector<std::string> rows, std::vector<std::string> cols,
                           const std::string& title, const std::string& value_name);
/// {"<prefix>0", …, "<prefix>n-1"}: axis labels of layers ("L"), heads ("H"), features.
std::vector<std::string> numbered_labels(const std::string& prefix, int64_t n);

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

/// The loss curves against position with L, 2L, … marked (L ≤ 0: no markers), each drawn as its
/// moving mean over `smooth` positions (trailing; 0: max(1, T/64)) — per-position loss of a few
/// windows is noisy; the files keep every position. Curves of one checkpoint share a dash,
/// curves of one scaling (the text after " · ") a colour.
CurveSet length_loss_curves(const std::vector<LossCurve>& curves, int64_t L, const std::string& title,
                            int64_t smooth = 0);

/// Sun et al.'s Fig. 2: the top-1, top-2 and top-3 |h| and the median |h| against layer, log y.
CurveSet massive_curves(const MassiveActivations& m, const std::string& title);

/// Heinsen's states, decay probabilities and logits, each a feature × position map (`labels`:
/// one per token, may be empty).
std::vector<HeatmapData> heinsen_maps(const HeinsenStates& s, const std::vector<std::string>& labels,
                                      const std::string& title);

/// The position-offset view: head (layer, head)'s pooled pattern at Δ = 0 and at Δ.
std::pair<HeatmapData, HeatmapData> offset_maps(const OffsetEffect& e, int64_t T, const std::string& title);

}  // namespace poslens
