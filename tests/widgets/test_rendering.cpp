// Rendering checks on whole widgets as a person sees them (grab() of the top-level widget, not
// the plot alone): the selected thumbnail's border colour, heatmap cells against the colour
// scale, and exported figures (PNG pixels, SVG text). They run in ctest, offscreen.
// Set POSLENS_SCREENSHOT_DIR to also keep the rendered images for a person to look at, e.g.
//   POSLENS_SCREENSHOT_DIR=/tmp/poslens-widgets build/tests/poslens_widget_tests
//       --gtest_filter='WidgetRendering.*'
#include <gtest/gtest.h>

#include <QDir>
#include <QFile>
#include <QImage>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>

#include "sample_heatmaps.h"
#include "widgets/color_scale.h"
#include "widgets/figure_export.h"
#include "widgets/head_grid.h"
#include "widgets/heatmap_view.h"

namespace poslens {
namespace {

/// Lets pending layouts and queued replots run, then renders `w` as the screen would.
QImage render(QWidget& w, const char* name) {
  for (int i = 0; i < 5; ++i) {
    QCoreApplication::processEvents();
    QTest::qWait(10);
  }
  QImage image = w.grab().toImage().convertToFormat(QImage::Format_RGB32);
  const QString dir = qEnvironmentVariable("POSLENS_SCREENSHOT_DIR");
  if (!dir.isEmpty() && QDir().mkpath(dir)) image.save(dir + "/" + name + ".png");
  return image;
}

::testing::AssertionResult near(QRgb actual, QRgb expected, int tolerance = 3) {
  if (std::abs(qRed(actual) - qRed(expected)) <= tolerance &&
      std::abs(qGreen(actual) - qGreen(expected)) <= tolerance &&
      std::abs(qBlue(actual) - qBlue(expected)) <= tolerance)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "colour " << QColor(actual).name().toStdString() << ", expected "
         << QColor(expected).name().toStdString();
}

/// A causal map whose cells all differ: cell (q, k) = (k + 1) / (q + 1) for k <= q.
HeatmapData ramp(int64_t n) {
  HeatmapData d = test_data::causalPattern(test_data::numberedTokens(n), "ramp");
  for (int64_t q = 0; q < n; ++q)
    for (int64_t k = 0; k <= q; ++k)
      d.values[static_cast<std::size_t>(q * n + k)] =
          static_cast<float>(static_cast<double>(k + 1) / static_cast<double>(q + 1));
  return d;
}

TEST(WidgetRendering, SelectedThumbnailHasAnOrangeBorderAndOthersNone) {
  HeadGrid grid;
  grid.setThumbnailSize(40);
  std::vector<HeatmapData> maps;
  for (int i = 0; i < 3 * 4; ++i) maps.push_back(test_data::constantMap(4, 4, 0.5f));
  grid.setHeads(3, 4, maps);
  grid.resize(400, 300);
  grid.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&grid));
  grid.selectHead(1, 2);
  const QImage image = render(grid, "head_grid_selected");
  const QPoint offset = grid.viewport()->mapTo(&grid, QPoint(0, 0));
  // The border is drawn in the gap around the thumbnail: 2 px left of its left edge.
  auto borderPixel = [&](int layer, int head) {
    const QRect r = grid.thumbnailRect(layer, head).translated(offset);
    return image.pixel(r.left() - 2, r.center().y());
  };
  EXPECT_TRUE(near(borderPixel(1, 2), qRgb(255, 90, 20))) << "selected head (1, 2)";
  EXPECT_FALSE(near(borderPixel(1, 1), qRgb(255, 90, 20), 40)) << "unselected head (1, 1)";
  // Inside the tile: the colour of 0.5 on the [0, 1] probability range.
  const QRect tile = grid.thumbnailRect(0, 0).translated(offset);
  EXPECT_TRUE(near(image.pixel(tile.center()), colormapColor(0.5)));
}

TEST(WidgetRendering, HeatmapCellsMatchTheColourScale) {
  HeatmapView view;
  view.resize(760, 680);
  view.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
  const HeatmapData data = ramp(6);
  view.setHeatmap(data);
  const QImage image = render(view, "heatmap_ramp");
  const QPoint offset = view.plotWidget()->mapTo(&view, QPoint(0, 0));
  const ColorRange range = view.colorRange();
  EXPECT_DOUBLE_EQ(range.lo, 0.0);
  EXPECT_DOUBLE_EQ(range.hi, 1.0);
  for (auto [q, k] : {std::pair{5, 0}, {5, 2}, {5, 5}, {3, 1}, {0, 0}}) {
    const QRgb pixel = image.pixel(*view.cellCenter(q, k) + offset);
    EXPECT_TRUE(near(pixel, colormapColor(data.at(q, k), range))) << "cell " << q << "," << k;
  }
  EXPECT_TRUE(near(image.pixel(*view.cellCenter(1, 4) + offset), nanCellColor().rgb()))
      << "a masked cell is grey";
}

TEST(WidgetRendering, SignedMapsAreCentredOnZero) {
  HeatmapView view;
  view.resize(500, 400);
  view.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
  HeatmapData scores = test_data::constantMap(1, 3, 0.0f, "logit");
  scores.kind = HeatmapKind::Signed;
  scores.values = {-1.0f, 0.0f, 4.0f};
  view.setHeatmap(scores);
  const QImage image = render(view, "heatmap_signed");
  const QPoint offset = view.plotWidget()->mapTo(&view, QPoint(0, 0));
  EXPECT_DOUBLE_EQ(view.colorRange().lo, -4.0);
  EXPECT_TRUE(near(image.pixel(*view.cellCenter(0, 1) + offset), colormapColor(0.5)))
      << "zero is the middle of the ramp";
  EXPECT_TRUE(near(image.pixel(*view.cellCenter(0, 2) + offset), colormapColor(1.0)));
}

TEST(WidgetRendering, ExportedPngShowsTheMapAndSvgIsAVectorFile) {
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  HeatmapView view;
  view.resize(600, 500);
  view.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
  HeatmapData one = test_data::constantMap(2, 2, 1.0f);
  view.setHeatmap(one);
  render(view, "heatmap_constant");
  QString error;
  const QString png = dir.filePath("map.png");
  ASSERT_TRUE(view.exportFigure(png, FigureFormat::Png, &error, 600, 500)) << error.toStdString();
  const QImage image(png);
  ASSERT_EQ(image.size(), QSize(600, 500));
  // The map fills the middle of the plot: its centre is the colour of 1.0.
  const QPoint centre = *view.cellCenter(0, 0) / 2 + *view.cellCenter(1, 1) / 2;
  EXPECT_TRUE(near(image.pixel(centre), colormapColor(1.0)));

  const QString svg = dir.filePath("map.svg");
  ASSERT_TRUE(view.exportFigure(svg, figureFormatForPath(svg), &error)) << error.toStdString();
  QFile file(svg);
  ASSERT_TRUE(file.open(QIODevice::ReadOnly));
  const QByteArray text = file.readAll();
  EXPECT_TRUE(text.contains("<svg")) << "an SVG document";
  EXPECT_EQ(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden).size(), 2)
      << "no temporary files are left";
}

TEST(FigureExport, FormatFollowsTheSuffix) {
  EXPECT_EQ(figureFormatForPath("a/b.PDF"), FigureFormat::Pdf);
  EXPECT_EQ(figureFormatForPath("x.svg"), FigureFormat::Svg);
  EXPECT_EQ(figureFormatForPath("x.png"), FigureFormat::Png);
  EXPECT_EQ(figureFormatForPath("x"), FigureFormat::Png);
  EXPECT_EQ(figureSuffix(FigureFormat::Svg), "svg");
}

TEST(FigureExport, FailedWriteLeavesNoFileAndKeepsTheOldOne) {
  QTemporaryDir dir;
  const QString path = dir.filePath("keep.png");
  {
    QFile old(path);
    ASSERT_TRUE(old.open(QIODevice::WriteOnly));
    old.write("old");
  }
  QString error;
  EXPECT_FALSE(writeAtomically(path, "PNG", [](const QString&) { return false; }, &error));
  EXPECT_TRUE(error.contains("keep.png")) << error.toStdString();
  QFile kept(path);
  ASSERT_TRUE(kept.open(QIODevice::ReadOnly));
  EXPECT_EQ(kept.readAll(), QByteArray("old"));
  EXPECT_EQ(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden).size(), 1);
}

}  // namespace
}  // namespace poslens
