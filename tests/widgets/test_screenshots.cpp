// Writes sample images of the widgets for a person to look at. Runs only when
// POSLENS_SCREENSHOT_DIR names a folder (created if missing), e.g.
//   POSLENS_SCREENSHOT_DIR=/tmp/poslens-widgets xvfb-run -a
//       build/tests/poslens_widget_tests --gtest_filter='WidgetScreenshots.*'
#include <gtest/gtest.h>

#include <QDir>
#include <QPixmap>
#include <QTest>

#include <cmath>
#include <sstream>

#include "sample_heatmaps.h"
#include "widgets/head_grid.h"
#include "widgets/heatmap_view.h"

namespace poslens {
namespace {

QString screenshotDir() {
  const QString dir = qEnvironmentVariable("POSLENS_SCREENSHOT_DIR");
  if (!dir.isEmpty()) QDir().mkpath(dir);
  return dir;
}

std::vector<std::string> sentenceTokens() {
  const std::string text =
      "Once upon a time , there was a little girl named Lily . She loved to play outside in "
      "the park with her big red ball . One day , she saw a small dog near the tree . The dog "
      "was sad";
  std::vector<std::string> tokens;
  std::istringstream in(text);
  std::string word;
  while (in >> word) tokens.push_back(tokens.empty() ? word : " " + word);
  return tokens;
}

/// A head that mixes a previous-token pattern (weight `prev`) with a recency decay `decay`.
HeatmapData syntheticHead(int64_t n, double prev, double decay, int layer, int head) {
  HeatmapData d = test_data::causalPattern(test_data::numberedTokens(n));
  for (int64_t q = 0; q < n; ++q) {
    double sum = 0;
    for (int64_t k = 0; k <= q; ++k) {
      const double w = std::exp(-decay * static_cast<double>(q - k)) + (k == q - 1 ? prev : 0.0) +
                       (k == 0 ? 0.5 : 0.0);
      d.values[static_cast<std::size_t>(q * n + k)] = static_cast<float>(w);
      sum += w;
    }
    for (int64_t k = 0; k <= q; ++k) d.values[static_cast<std::size_t>(q * n + k)] /= static_cast<float>(sum);
  }
  d.layer = layer;
  d.head = head;
  d.title = "L" + std::to_string(layer) + " H" + std::to_string(head) + " pattern";
  return d;
}

void save(QWidget& w, const QString& path) {
  for (int i = 0; i < 5; ++i) {
    QCoreApplication::processEvents();
    QTest::qWait(10);
  }
  ASSERT_TRUE(w.grab().save(path)) << path.toStdString();
}

TEST(WidgetScreenshots, HeatmapViews) {
  const QString dir = screenshotDir();
  if (dir.isEmpty()) GTEST_SKIP() << "set POSLENS_SCREENSHOT_DIR to write screenshots";
  HeatmapView view;
  view.resize(760, 680);
  view.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
  save(view, dir + "/heatmap_view_empty.png");

  view.setHeatmap(test_data::causalPattern(test_data::storyTokens(), "L0 H3 pattern"));
  QTest::mouseMove(view.plotWidget(), *view.cellCenter(3, 1));
  save(view, dir + "/heatmap_view_story.png");

  HeatmapData sentence = test_data::causalPattern(sentenceTokens(), "L2 H5 pattern");
  view.setHeatmap(sentence);
  save(view, dir + "/heatmap_view_sentence.png");

  view.setHeatmap(test_data::pooledMap(300, 100));
  QTest::mouseMove(view.plotWidget(), *view.cellCenter(10, 20));
  save(view, dir + "/heatmap_view_pooled.png");

  view.setHeatmap(syntheticHead(200, 3.0, 0.05, 1, 2));
  save(view, dir + "/heatmap_view_200.png");

  view.setHeatmap(test_data::constantMap(1, 1, 0.5f));
  save(view, dir + "/heatmap_view_1x1.png");

  HeatmapData row = test_data::causalPattern(test_data::storyTokens(), "one query row");
  row.rows = row.source_rows = 1;
  row.values.assign(row.values.begin() + 20, row.values.end());  // the last query (",")
  row.row_labels = {","};
  view.setHeatmap(row);
  save(view, dir + "/heatmap_view_1x5.png");

  view.setHeatmap(sentence);
  QString error;
  EXPECT_TRUE(view.exportPng(dir + "/export.png", 1000, 900, &error)) << error.toStdString();
  EXPECT_TRUE(view.exportPdf(dir + "/export.pdf", &error)) << error.toStdString();
}

TEST(WidgetScreenshots, HeadGrid) {
  const QString dir = screenshotDir();
  if (dir.isEmpty()) GTEST_SKIP() << "set POSLENS_SCREENSHOT_DIR to write screenshots";
  HeadGrid grid;
  grid.resize(720, 560);
  grid.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&grid));
  save(grid, dir + "/head_grid_empty.png");
  const int layers = 6, heads = 8;
  std::vector<HeatmapData> maps;
  for (int l = 0; l < layers; ++l)
    for (int h = 0; h < heads; ++h)
      maps.push_back(syntheticHead(32, (h % 3 == 0) ? 4.0 : 0.2, 0.05 + 0.25 * ((l + h) % 4), l, h));
  grid.setHeads(layers, heads, maps);
  grid.selectHead(2, 5);
  save(grid, dir + "/head_grid.png");
  grid.setThumbnailSize(40);
  save(grid, dir + "/head_grid_40px.png");
}

}  // namespace
}  // namespace poslens
