#pragma once
// Curves against one shared x axis — per-position loss (length generalisation), magnitudes per
// layer (massive activations) — as widgets/curve_plot.h draws them. Plain std types only.
#include <string>
#include <utility>
#include <vector>

namespace poslens {

struct CurveSet {
  std::string title;
  std::string x_label, y_label;
  std::vector<double> x;                    ///< [point], shared by every curve
  std::vector<std::string> names;           ///< [curve], the legend
  std::vector<std::vector<double>> y;       ///< [curve][point]; NaN: a gap
  /// Vertical lines at x with a label (the training length L, 2L, …).
  std::vector<std::pair<double, std::string>> markers;
  bool log_y = false;                       ///< logarithmic y axis (magnitudes)
  /// Optional per curve: colour and dash pattern indices (default: colour = curve index, solid),
  /// so curves of one group share a colour or a dash.
  std::vector<int> colour, dash;

  bool empty() const { return y.empty() || x.empty(); }
};

}  // namespace poslens
