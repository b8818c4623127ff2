#pragma once
// One layer's rotary score terms on the user's input as whole maps (every query row, not just the
// last): what the Frequencies panel's component map draws, from the GUI's decomposition or a
// `poslens-cli frequencies` file. Plain std types only: no LibTorch, no Qt.
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/heatmap_data.h"

namespace poslens {

/// Per-component score terms of one layer on T tokens (Chen et al. 2024, "HoPE", arXiv
/// 2410.21216, eq. 4: q·k = Σ_c q_c·R(θ_c (i − j))·k_c, one term per rotary component c; the
/// terms are on the score scale, attention scale included).
struct ComponentMaps {
  int layer = 0;
  int64_t T = 0;
  int64_t n_components = 0;
  /// The heads the maps cover, in `values` order: −1 for the mean over the decomposed heads
  /// (always first), then head numbers. Empty: no maps (too large to send, see `note`).
  std::vector<int> heads;
  /// float32 [heads.size(), n_components, T (query), T (key)], row-major; NaN where the mask
  /// hides the key.
  std::vector<float> values;
  std::vector<double> theta;          ///< [component] effective θ_c, radians per position
  std::vector<std::string> labels;    ///< [position] token texts as shown, may be empty
  std::string input_note;             ///< the input's name, for titles
  std::string note;                   ///< why some or all maps are missing; empty otherwise

  bool empty() const { return heads.empty(); }
  /// Whether `head` (−1: the mean) has maps.
  bool has(int head) const;
};

/// Component `component`'s [T, T] map of `head` (−1: the head mean) as a HeatmapData: query rows,
/// key columns, NaN where masked, kind Signed, the title naming layer, head, component, θ_c and
/// its wavelength 2π/θ_c in positions. An empty HeatmapData (rows 0) when the head has no maps
/// or the component is out of range.
HeatmapData component_map(const ComponentMaps& maps, int head, int component);

}  // namespace poslens
