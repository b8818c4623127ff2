#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "sample_heatmaps.h"
#include "widgets/color_scale.h"

namespace poslens {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(ColorScale, EndsAreViridisEndsAndNanIsGrey) {
  EXPECT_EQ(colormapColor(0.0) & 0xffffff, 0x440154u);
  EXPECT_EQ(colormapColor(1.0) & 0xffffff, 0xfde725u);
  EXPECT_EQ(colormapColor(-3.0), colormapColor(0.0));  // clamped
  EXPECT_EQ(colormapColor(7.0), colormapColor(1.0));
  EXPECT_EQ(colormapColor(std::nan("")), nanCellColor().rgb());
  EXPECT_EQ(qAlpha(colormapColor(0.3)), 255);
}

TEST(ColorScale, LuminanceGrowsAlongTheRamp) {
  // Relative luminance (Rec. 709 weights) must rise monotonically for a perceptual ramp.
  double previous = -1.0;
  for (int i = 0; i <= 50; ++i) {
    const QRgb c = colormapColor(i / 50.0);
    const double luminance = 0.2126 * qRed(c) + 0.7152 * qGreen(c) + 0.0722 * qBlue(c);
    EXPECT_GT(luminance, previous) << "at t=" << i / 50.0;
    previous = luminance;
  }
}

TEST(ColorScale, StopsMatchTheRamp) {
  const auto stops = colormapStops();
  ASSERT_GE(stops.size(), 2u);
  EXPECT_DOUBLE_EQ(stops.front().first, 0.0);
  EXPECT_DOUBLE_EQ(stops.back().first, 1.0);
  for (const auto& [pos, color] : stops) {
    const QRgb lut = colormapColor(pos);  // 256-entry table: within a few units of the stop
    EXPECT_NEAR(color.red(), qRed(lut), 3) << "stop at " << pos;
    EXPECT_NEAR(color.green(), qGreen(lut), 3) << "stop at " << pos;
    EXPECT_NEAR(color.blue(), qBlue(lut), 3) << "stop at " << pos;
  }
}

TEST(ColorScale, ValueRangeMapsLoAndHiToTheEnds) {
  const ColorRange range{-2.0, 6.0};
  EXPECT_EQ(colormapColor(-2.0, range), colormapColor(0.0));
  EXPECT_EQ(colormapColor(6.0, range), colormapColor(1.0));
  EXPECT_EQ(colormapColor(2.0, range), colormapColor(0.5));
  EXPECT_EQ(colormapColor(5.0, ColorRange{1.0, 1.0}), colormapColor(0.5));  // degenerate
}

TEST(ColorScale, AutoRangeIsUnitForWeightsElseFiniteDataRange) {
  HeatmapData d = test_data::constantMap(2, 2, 0.25f);
  EXPECT_DOUBLE_EQ(autoColorRange(d).lo, 0.0);
  EXPECT_DOUBLE_EQ(autoColorRange(d).hi, 1.0);

  d.value_name = "score";
  d.kind = HeatmapKind::Logit;
  d.values = {-3.5f, kNaN, 2.0f, -std::numeric_limits<float>::infinity()};
  EXPECT_DOUBLE_EQ(autoColorRange(d).lo, -3.5);
  EXPECT_DOUBLE_EQ(autoColorRange(d).hi, 2.0);

  d.values = {4.0f, 4.0f, kNaN, 4.0f};
  EXPECT_DOUBLE_EQ(autoColorRange(d).lo, 3.5);
  EXPECT_DOUBLE_EQ(autoColorRange(d).hi, 4.5);

  d.values = {kNaN, kNaN, kNaN, kNaN};
  EXPECT_DOUBLE_EQ(autoColorRange(d).lo, 0.0);
  EXPECT_DOUBLE_EQ(autoColorRange(d).hi, 1.0);
}

TEST(ColorScale, ImageHasOnePixelPerCellQueryZeroOnTop) {
  const HeatmapData d = test_data::causalPattern(test_data::storyTokens());
  const QImage image = heatmapImage(d, {0.0, 1.0});
  ASSERT_EQ(image.width(), 5);
  ASSERT_EQ(image.height(), 5);
  for (int r = 0; r < 5; ++r)
    for (int c = 0; c < 5; ++c)
      EXPECT_EQ(image.pixel(c, r), colormapColor(d.at(r, c), {0.0, 1.0})) << r << "," << c;
  EXPECT_EQ(image.pixel(4, 0), nanCellColor().rgb());  // masked: key after query
  EXPECT_EQ(image.pixel(0, 0), colormapColor(1.0));    // query 0 attends only to key 0

  HeatmapData short_values = d;
  short_values.values.resize(7);
  EXPECT_TRUE(heatmapImage(short_values, {0.0, 1.0}).isNull());
  EXPECT_TRUE(heatmapImage(HeatmapData{}, {0.0, 1.0}).isNull());
}

}  // namespace
}  // namespace poslens

namespace poslens {
namespace {

TEST(ColorScale, AutoRangeFollowsTheKindOfData) {
  HeatmapData d = test_data::constantMap(1, 3, 0.0f, "value");
  d.values = {0.2f, 0.3f, 0.4f};
  d.kind = HeatmapKind::Gate;
  EXPECT_DOUBLE_EQ(autoColorRange(d).lo, 0.0);
  EXPECT_DOUBLE_EQ(autoColorRange(d).hi, 1.0);
  d.kind = HeatmapKind::Logit;
  EXPECT_DOUBLE_EQ(autoColorRange(d).lo, 0.2f);
  d.kind = HeatmapKind::Position;
  EXPECT_DOUBLE_EQ(autoColorRange(d).lo, 0.0);
  EXPECT_DOUBLE_EQ(autoColorRange(d).hi, 0.4f);
  d.values = {-0.5f, 0.0f, 2.0f};
  d.kind = HeatmapKind::Signed;
  EXPECT_DOUBLE_EQ(autoColorRange(d).lo, -2.0);
  EXPECT_DOUBLE_EQ(autoColorRange(d).hi, 2.0);
  d.value_name = "weight";  // the label does not choose the range
  d.kind = HeatmapKind::Value;
  EXPECT_DOUBLE_EQ(autoColorRange(d).lo, -0.5);
}

}  // namespace
}  // namespace poslens
