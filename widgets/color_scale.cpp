#include "widgets/color_scale.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace poslens {
namespace {

// Eleven evenly spaced samples of the viridis colormap (van der Walt & Smith, matplotlib 1.5),
// positions 0, 0.1, ..., 1. Between them the ramp is linear in RGB, which stays within a few
// units of the full 256-entry table.
constexpr std::array<QRgb, 11> kAnchors = {
    0x440154, 0x482475, 0x414487, 0x355f8d, 0x2a788e, 0x21918c,
    0x22a884, 0x44bf70, 0x7ad151, 0xbddf26, 0xfde725,
};

constexpr int kLutSize = 256;

// Lookup table with kLutSize entries, filled once: colormapColor is called per cell.
const std::array<QRgb, kLutSize>& lut() {
  static const std::array<QRgb, kLutSize> table = [] {
    std::array<QRgb, kLutSize> t{};
    const int segments = static_cast<int>(kAnchors.size()) - 1;
    for (int i = 0; i < kLutSize; ++i) {
      const double pos = static_cast<double>(i) / (kLutSize - 1) * segments;
      const int seg = std::min(static_cast<int>(pos), segments - 1);
      const double f = pos - seg;
      const QRgb a = kAnchors[static_cast<std::size_t>(seg)];
      const QRgb b = kAnchors[static_cast<std::size_t>(seg) + 1];
      auto mix = [f](int x, int y) { return static_cast<int>(std::lround(x + (y - x) * f)); };
      t[static_cast<std::size_t>(i)] =
          qRgb(mix(qRed(a), qRed(b)), mix(qGreen(a), qGreen(b)), mix(qBlue(a), qBlue(b)));
    }
    return t;
  }();
  return table;
}

}  // namespace

QRgb colormapColor(double t) {
  if (std::isnan(t)) return nanCellColor().rgb();
  const double c = std::clamp(t, 0.0, 1.0);
  return lut()[static_cast<std::size_t>(std::lround(c * (kLutSize - 1)))];
}

QRgb colormapColor(double value, const ColorRange& range) {
  if (std::isnan(value)) return nanCellColor().rgb();
  const double span = range.hi - range.lo;
  if (!(span > 0.0)) return colormapColor(0.5);
  return colormapColor((value - range.lo) / span);
}

std::vector<std::pair<double, QColor>> colormapStops() {
  std::vector<std::pair<double, QColor>> stops;
  const int segments = static_cast<int>(kAnchors.size()) - 1;
  for (int i = 0; i <= segments; ++i)
    stops.emplace_back(static_cast<double>(i) / segments,
                       QColor::fromRgb(kAnchors[static_cast<std::size_t>(i)]));
  return stops;
}

QColor nanCellColor() { return QColor(0xd8, 0xd8, 0xd8); }

ColorRange autoColorRange(const HeatmapData& data) {
  if (data.kind == HeatmapKind::Probability || data.kind == HeatmapKind::Gate) return {0.0, 1.0};
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  for (float v : data.values) {
    if (!std::isfinite(v)) continue;
    lo = std::min(lo, static_cast<double>(v));
    hi = std::max(hi, static_cast<double>(v));
  }
  if (!(lo <= hi)) return {0.0, 1.0};
  if (data.kind == HeatmapKind::Signed) {  // 0 sits in the middle of the ramp
    const double m = std::max(std::fabs(lo), std::fabs(hi));
    return m > 0 ? ColorRange{-m, m} : ColorRange{-0.5, 0.5};
  }
  if (data.kind == HeatmapKind::Position && lo >= 0) lo = 0.0;  // position 0 is the darkest
  if (lo == hi) return {lo - 0.5, hi + 0.5};
  return {lo, hi};
}

QImage heatmapImage(const HeatmapData& data, const ColorRange& range) {
  if (data.rows <= 0 || data.cols <= 0) return {};
  const auto cells = static_cast<std::size_t>(data.rows) * static_cast<std::size_t>(data.cols);
  if (data.values.size() < cells) return {};
  QImage image(static_cast<int>(data.cols), static_cast<int>(data.rows), QImage::Format_RGB32);
  const float* v = data.values.data();
  for (int r = 0; r < image.height(); ++r) {
    auto* line = reinterpret_cast<QRgb*>(image.scanLine(r));
    for (int c = 0; c < image.width(); ++c) line[c] = colormapColor(*v++, range);
  }
  return image;
}

}  // namespace poslens
