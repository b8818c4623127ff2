#pragma once
// A plot axis over token positions, shared by every plot panel: tick labels are the tokens
// (one per position), thinned to every k-th cell (k from 1, 2, 5, 10, 20, ...) so neighbouring
// labels never overlap at the axis' current pixel length and range; a pooled axis (fewer cells
// than positions) is labelled with the first source position of each block instead.
// QCustomPlot stays forward-declared; the .cpp installs a QCPAxisTickerText on the axis.
#include <QString>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

class QCPAxis;

namespace poslens {

/// A token's text on one line: newline, carriage return and tab shown as \n, \r, \t.
QString displayToken(const std::string& token);

/// The block of source positions [first, last] behind shown cell `i` of a pooled axis with
/// `shown` cells over `source` positions (block size ceil(source / shown), edge block smaller);
/// {i, i} when the axis is not pooled.
std::pair<int64_t, int64_t> sourceBlock(int64_t i, int64_t shown, int64_t source);

/// Smallest of 1, 2, 5, 10, 20, 50, ... that is >= `min_step`.
int niceTickStep(double min_step);

class TokenAxis {
 public:
  /// Takes over `axis`' ticker (a text ticker without sub-ticks). The axis must outlive this.
  explicit TokenAxis(QCPAxis* axis);

  /// The positions along the axis: `shown` cells over `source` positions (source > shown when
  /// pooled), `labels` one token per source position (may be empty: indices are shown).
  void setPositions(int64_t shown, int64_t source, std::vector<std::string> labels);
  /// No positions: no ticks.
  void clear();

  /// Recomputes the ticks for the axis' current range and pixel length; call before each
  /// replot. `fallback_px` is the length to assume before the first layout.
  void updateTicks(int fallback_px);

  /// The label step the axis needs now; differs from step() after a resize that happened
  /// during the last replot (the owner then replots once more).
  int desiredStep(int fallback_px) const;
  /// The step used at the last updateTicks().
  int step() const { return step_; }

  QCPAxis* axis() const { return axis_; }

 private:
  QCPAxis* axis_;
  int64_t shown_ = 0;
  int64_t source_ = 0;
  std::vector<std::string> labels_;
  int step_ = 1;
};

}  // namespace poslens
