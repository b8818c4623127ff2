#include <gtest/gtest.h>

#include <cmath>

#include <QApplication>
#include <QImage>
#include <QSignalSpy>
#include <QTest>

#include "sample_heatmaps.h"
#include "widgets/color_scale.h"
#include "widgets/head_grid.h"

namespace poslens {
namespace {

/// Thumbnail of head (layer, head): a constant map whose value encodes the index, so a pixel's
/// colour tells which head's image was painted where.
HeatmapData headMap(int layer, int head, int n_heads, int n_layers) {
  const float value = static_cast<float>(layer * n_heads + head) /
                      static_cast<float>(n_layers * n_heads - 1);
  return test_data::constantMap(6, 6, value);
}

std::vector<HeatmapData> headMaps(int n_layers, int n_heads) {
  std::vector<HeatmapData> maps;
  for (int l = 0; l < n_layers; ++l)
    for (int h = 0; h < n_heads; ++h) maps.push_back(headMap(l, h, n_heads, n_layers));
  return maps;
}

class HeadGridTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grid.setThumbnailSize(40);
    grid.setHeads(3, 4, headMaps(3, 4));
    grid.resize(400, 300);
    grid.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&grid));
  }
  QImage grabViewport() { return grid.viewport()->grab().toImage(); }
  HeadGrid grid;
};

TEST_F(HeadGridTest, LayoutIsARegularGridOfSquareThumbnails) {
  EXPECT_EQ(grid.layerCount(), 3);
  EXPECT_EQ(grid.headCount(), 4);
  const QRect r00 = grid.thumbnailRect(0, 0);
  const QRect r01 = grid.thumbnailRect(0, 1);
  const QRect r10 = grid.thumbnailRect(1, 0);
  EXPECT_EQ(r00.size(), QSize(40, 40));
  EXPECT_EQ(r01.top(), r00.top());
  EXPECT_EQ(r10.left(), r00.left());
  EXPECT_GT(r01.left(), r00.right());  // a gap between neighbours
  EXPECT_EQ(r01.left() - r00.left(), r10.top() - r00.top());
  EXPECT_EQ(grid.thumbnailRect(2, 3).topLeft(),
            r00.topLeft() + QPoint(3 * (r01.left() - r00.left()), 2 * (r10.top() - r00.top())));
  EXPECT_GT(r00.left(), 0);  // room for the "L0" header
  EXPECT_GT(r00.top(), 0);   // room for the "H0" header
  EXPECT_TRUE(grid.thumbnailRect(3, 0).isEmpty());
}

TEST_F(HeadGridTest, ClickOnThumbnailEmitsHeadSelected) {
  QSignalSpy spy(&grid, &HeadGrid::headSelected);
  const QRect r = grid.thumbnailRect(0, 0);
  const int pitch = grid.thumbnailRect(0, 1).left() - r.left();
  // Layer 2, head 1, computed from the pitch rather than asked from the grid.
  const QPoint click = r.topLeft() + QPoint(1 * pitch + 5, 2 * pitch + 30);
  QTest::mouseClick(grid.viewport(), Qt::LeftButton, Qt::NoModifier, click);
  ASSERT_EQ(spy.count(), 1);
  EXPECT_EQ(spy.at(0).at(0).toInt(), 2);
  EXPECT_EQ(spy.at(0).at(1).toInt(), 1);
  EXPECT_EQ(grid.selectedHead(), std::make_pair(2, 1));

  // The gap between thumbnails and the headers select nothing.
  QTest::mouseClick(grid.viewport(), Qt::LeftButton, Qt::NoModifier, QPoint(r.right() + 3, r.center().y()));
  QTest::mouseClick(grid.viewport(), Qt::LeftButton, Qt::NoModifier, QPoint(2, 2));
  EXPECT_EQ(spy.count(), 1);
  EXPECT_EQ(grid.selectedHead(), std::make_pair(2, 1));
}

TEST_F(HeadGridTest, ArrowKeysMoveTheSelectionAndStopAtTheEdges) {
  QSignalSpy spy(&grid, &HeadGrid::headSelected);
  grid.setFocus();
  QTest::keyClick(&grid, Qt::Key_Right);  // nothing selected yet: selects (0, 0)
  EXPECT_EQ(grid.selectedHead(), std::make_pair(0, 0));
  QTest::keyClick(&grid, Qt::Key_Right);
  EXPECT_EQ(grid.selectedHead(), std::make_pair(0, 1));
  QTest::keyClick(&grid, Qt::Key_Down);
  QTest::keyClick(&grid, Qt::Key_Down);
  EXPECT_EQ(grid.selectedHead(), std::make_pair(2, 1));
  QTest::keyClick(&grid, Qt::Key_Down);  // already on the last layer
  EXPECT_EQ(grid.selectedHead(), std::make_pair(2, 1));
  QTest::keyClick(&grid, Qt::Key_Left);
  QTest::keyClick(&grid, Qt::Key_Left);  // already on head 0
  QTest::keyClick(&grid, Qt::Key_Up);
  EXPECT_EQ(grid.selectedHead(), std::make_pair(1, 0));
  ASSERT_EQ(spy.count(), 6);  // (0,0) (0,1) (1,1) (2,1) (2,0) (1,0): no signal at the edges
  EXPECT_EQ(spy.at(3).at(0).toInt(), 2);
  EXPECT_EQ(spy.at(3).at(1).toInt(), 1);
  EXPECT_EQ(spy.at(5).at(0).toInt(), 1);
  EXPECT_EQ(spy.at(5).at(1).toInt(), 0);
}

TEST_F(HeadGridTest, SelectHeadProgrammatically) {
  QSignalSpy spy(&grid, &HeadGrid::headSelected);
  grid.selectHead(1, 3);
  grid.selectHead(1, 3);   // unchanged: no second signal
  grid.selectHead(5, 0);   // outside: ignored
  ASSERT_EQ(spy.count(), 1);
  EXPECT_EQ(grid.selectedHead(), std::make_pair(1, 3));
  grid.selectHead(-1, -1);
  EXPECT_EQ(grid.selectedHead(), std::make_pair(-1, -1));
  EXPECT_EQ(spy.count(), 1);
}

TEST_F(HeadGridTest, TooltipNamesLayerAndHead) {
  EXPECT_EQ(grid.toolTipAt(grid.thumbnailRect(2, 3).center()), QStringLiteral("layer 2, head 3"));
  EXPECT_EQ(grid.toolTipAt(grid.thumbnailRect(0, 1).topLeft()), QStringLiteral("layer 0, head 1"));
  EXPECT_TRUE(grid.toolTipAt(grid.thumbnailRect(0, 0).topLeft() - QPoint(3, 3)).isEmpty());
}

TEST_F(HeadGridTest, ThumbnailsArePaintedWithTheSharedColormapAndSelectionIsOutlined) {
  grid.selectHead(1, 2);
  const QImage image = grabViewport();
  const qreal dpr = image.devicePixelRatio();
  auto pixel = [&](QPoint p) { return image.pixel(static_cast<int>(p.x() * dpr), static_cast<int>(p.y() * dpr)); };
  for (int l = 0; l < 3; ++l)
    for (int h = 0; h < 4; ++h) {
      const QRgb expected = colormapColor(headMap(l, h, 4, 3).values[0], {0.0, 1.0});
      EXPECT_EQ(pixel(grid.thumbnailRect(l, h).center()), expected) << "head " << l << "," << h;
    }
  const QRgb orange = qRgb(255, 90, 20);
  const QRect sel = grid.thumbnailRect(1, 2);
  EXPECT_EQ(pixel(QPoint(sel.left() - 3, sel.center().y())), orange);
  EXPECT_EQ(pixel(QPoint(sel.center().x(), sel.bottom() + 3)), orange);
  const QRect other = grid.thumbnailRect(0, 0);
  EXPECT_NE(pixel(QPoint(other.left() - 3, other.center().y())), orange);
}

TEST_F(HeadGridTest, ThumbnailSizeIsAdjustableAndClamped) {
  grid.setThumbnailSize(90);
  EXPECT_EQ(grid.thumbnailSize(), 90);
  EXPECT_EQ(grid.thumbnailRect(1, 1).size(), QSize(90, 90));
  EXPECT_EQ(grid.headAt(grid.thumbnailRect(1, 1).center()), std::make_pair(1, 1));
  grid.setThumbnailSize(2);
  EXPECT_EQ(grid.thumbnailSize(), 16);
  grid.setThumbnailSize(100000);
  EXPECT_EQ(grid.thumbnailSize(), 512);
}

TEST_F(HeadGridTest, MissingThumbnailsAndClear) {
  grid.selectHead(2, 3);
  grid.setHeads(2, 2, headMaps(1, 2));  // second layer missing; selection (2,3) now outside
  EXPECT_EQ(grid.selectedHead(), std::make_pair(-1, -1));
  const QImage image = grabViewport();  // paints the missing tiles without crashing
  EXPECT_FALSE(image.isNull());
  grid.selectHead(1, 1);
  grid.clear();
  EXPECT_EQ(grid.layerCount(), 0);
  EXPECT_EQ(grid.selectedHead(), std::make_pair(-1, -1));
  EXPECT_EQ(grid.headAt(QPoint(60, 60)), std::make_pair(-1, -1));
}

// "Fast" as a condition, not a time: a paint scales only the thumbnails in view, so a 32 x 32
// model costs what the viewport shows (timings belong in benchmarks, not in tests).
TEST(HeadGridLarge, ThirtyTwoByThirtyTwoHeadsPaintOnlyWhatIsInViewAndScrollToTheSelection) {
  HeadGrid grid;
  grid.resize(600, 500);
  grid.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&grid));
  std::vector<HeatmapData> maps;
  for (int i = 0; i < 32 * 32; ++i)
    maps.push_back(test_data::causalPattern(test_data::numberedTokens(64)));
  grid.setHeads(32, 32, std::move(maps));
  EXPECT_EQ(grid.scaledTileCount(), 0) << "setHeads scales nothing";
  const QImage first = grid.viewport()->grab().toImage();
  const int per_view = (grid.viewport()->width() / grid.thumbnailSize() + 2) *
                       (grid.viewport()->height() / grid.thumbnailSize() + 2);
  const int after_first = grid.scaledTileCount();
  EXPECT_GT(after_first, 0);
  EXPECT_LE(after_first, per_view) << "the first paint scaled tiles outside the viewport";
  grid.selectHead(31, 31);  // scrolls to the far corner
  const QImage second = grid.viewport()->grab().toImage();
  EXPECT_LE(grid.scaledTileCount(), 2 * per_view) << "of 1024 tiles, two views' worth at most";
  EXPECT_TRUE(grid.viewport()->rect().contains(grid.thumbnailRect(31, 31)));
  EXPECT_FALSE(grid.viewport()->rect().intersects(grid.thumbnailRect(0, 0)));
  EXPECT_FALSE(first.isNull());
  EXPECT_FALSE(second.isNull());
}

}  // namespace
}  // namespace poslens

namespace poslens {
namespace {

TEST_F(HeadGridTest, MetricColoursTilesOnOneScaleAndClearsWithNewHeads) {
  std::vector<double> values(12);
  for (int i = 0; i < 12; ++i) values[static_cast<size_t>(i)] = i;
  values[5] = std::nan("");
  grid.setMetric("entropy", values);
  EXPECT_EQ(grid.metricName(), "entropy");
  EXPECT_EQ(grid.metricRange(), std::make_pair(0.0, 11.0));
  QApplication::processEvents();
  const QImage shot = grabViewport();
  const auto colourAt = [&](int layer, int head) {
    const QRect r = grid.thumbnailRect(layer, head);
    return shot.pixelColor(r.left() + 2, r.top() + 2);  // a corner: away from the value text
  };
  EXPECT_EQ(colourAt(0, 0).rgb(), colormapColor(0.0));
  EXPECT_EQ(colourAt(2, 3).rgb(), colormapColor(1.0));
  EXPECT_NE(colourAt(1, 1).rgb(), colormapColor(0.0)) << "NaN is drawn grey, not as the minimum";
  grid.setMetric("entropy", {1.0, 2.0});  // wrong size: back to thumbnails
  EXPECT_TRUE(grid.metricName().isEmpty());
  grid.setMetric("sink", values);
  grid.setHeads(3, 4, headMaps(3, 4));
  EXPECT_TRUE(grid.metricName().isEmpty());
}

}  // namespace
}  // namespace poslens
