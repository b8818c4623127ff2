#pragma once
// Value types the Frequencies panel and the CLI's frequency figures draw (widgets/
// frequency_plot.h): one layer's (or head's) curves against key position with their rotary
// components, and VAF across a checkpoint series. Plain std types only: no LibTorch, no Qt.
#include <cstdint>
#include <string>
#include <vector>

namespace poslens {

/// The last query's logit to each key, overall and per rotary component, for one layer and head
/// (or the mean over heads): from the U-shape probe or from the user's input.
struct FrequencyCurves {
  std::string title;     ///< what is shown and on what input, one line
  int layer = 0;
  int head = -1;         ///< -1: mean over heads
  int64_t T = 0;         ///< keys per curve (the query is at T−1)
  int64_t L = 0;         ///< training length (0: unknown)
  int64_t kept_components = 0;  ///< HoPE's cut; == theta.size() for RoPE
  std::vector<double> theta;    ///< [component], radians per position (0 past HoPE's cut)
  std::vector<bool> activated;  ///< [component], π/L < θ_c < 2π/L
  std::vector<double> scores;   ///< [key_pos]
  std::vector<std::vector<double>> components;  ///< [component][key_pos]
  std::vector<double> vaf;      ///< [component], % (NaN: flat curve)
  std::vector<std::string> key_labels;  ///< [key_pos] token texts, may be empty (probe)

  bool empty() const { return scores.empty(); }
  int64_t n_components() const { return static_cast<int64_t>(theta.size()); }
};

/// VAF per component over a series of checkpoints (Chen et al. 2024 Fig. 2a).
struct VafSeries {
  std::string title;
  int layer = 0;
  std::vector<std::string> names;   ///< [checkpoint]
  std::vector<int64_t> steps;       ///< [checkpoint], -1 unknown (then the index is used)
  std::vector<std::vector<double>> vaf;  ///< [checkpoint][component], %
  std::vector<double> theta;
  std::vector<bool> activated;

  bool empty() const { return vaf.empty(); }
};

}  // namespace poslens
