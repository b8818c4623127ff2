#pragma once
// The one colormap shared by every PosLens heatmap (the large HeatmapView and the HeadGrid
// thumbnails), so a colour means the same value everywhere. Perceptual and monotone in
// lightness (viridis-like: dark purple for low values, yellow for high), with masked cells (NaN)
// in a neutral light grey that is not part of the ramp. No QCustomPlot here: views that use
// QCPColorGradient build it from colormapStops().
#include <QColor>
#include <QImage>
#include <QRgb>

#include <utility>
#include <vector>

#include "analysis/heatmap_data.h"

namespace poslens {

/// Inclusive value range mapped onto the colormap: `lo` -> first colour, `hi` -> last colour.
struct ColorRange {
  double lo = 0.0;
  double hi = 1.0;
};

/// Colour of the ramp at `t` in [0, 1] (values outside are clamped; NaN gives nanCellColor()).
/// Linear interpolation in RGB between the anchor stops of colormapStops(). Opaque.
QRgb colormapColor(double t);

/// Colour of `value` for the range `range` (lo maps to t=0, hi to t=1; a degenerate range
/// lo==hi maps everything to the middle of the ramp). NaN gives nanCellColor().
QRgb colormapColor(double value, const ColorRange& range);

/// The anchor stops of the ramp as (position in [0, 1], colour), ascending, first at 0 and last
/// at 1. Feed them to QCPColorGradient::setColorStops to draw the same ramp with QCustomPlot.
std::vector<std::pair<double, QColor>> colormapStops();

/// Neutral light grey used for masked (NaN) cells.
QColor nanCellColor();

/// The default colour range of a map, chosen by `data.kind`: [0, 1] for Probability and Gate;
/// otherwise [min, max] of its finite values, widened to [-m, m] (m = max |value|) for Signed
/// and starting at 0 for a non-negative Position map. A map with no finite values gives [0, 1],
/// and a constant map c gives [c - 0.5, c + 0.5] so the range is never empty.
ColorRange autoColorRange(const HeatmapData& data);

/// One pixel per cell: an image of `data.cols` x `data.rows` pixels (pixel (x=c, y=r) is cell
/// (row r, col c), so query 0 is the top row), Format_RGB32, coloured with `range`. Returns a
/// null QImage when the map is empty or `values` is shorter than rows*cols.
QImage heatmapImage(const HeatmapData& data, const ColorRange& range);

}  // namespace poslens
