#include <gtest/gtest.h>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QWheelEvent>

#include <cmath>
#include <limits>

#include "sample_heatmaps.h"
#include "widgets/figure_export.h"
#include "widgets/heatmap_view.h"

namespace poslens {
namespace {

using test_data::causalPattern;
using test_data::storyTokens;

/// A shown HeatmapView of a fixed size, with the event loop run until its layout settled.
class HeatmapViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    view.resize(720, 640);
    view.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
  }
  void show(const HeatmapData& data) {
    view.setHeatmap(data);
    settle();
  }
  static void settle() {
    for (int i = 0; i < 5; ++i) {
      QCoreApplication::processEvents();
      QTest::qWait(5);
    }
  }
  /// Moves the mouse onto the centre of a cell and waits (up to 1 s: on a real X server the
  /// move arrives through the window system) until `spy` saw one more signal.
  void hover(int query, int key, QSignalSpy& spy) {
    const auto center = view.cellCenter(query, key);
    ASSERT_TRUE(center.has_value());
    const auto before = spy.count();
    QTest::mouseMove(view.plotWidget(), *center);
    for (int waited = 0; spy.count() == before && waited < 1000; waited += 10) QTest::qWait(10);
  }
  /// Pixel of a grabbed image at widget coordinates `p` (scaled by its device pixel ratio).
  static QRgb pixelAt(const QImage& image, QPoint p) {
    const qreal dpr = image.devicePixelRatio();
    return image.pixel(static_cast<int>(p.x() * dpr), static_cast<int>(p.y() * dpr));
  }
  HeatmapView view;
};

TEST_F(HeatmapViewTest, StartsEmptyWithAHint) {
  EXPECT_FALSE(view.hasHeatmap());
  EXPECT_EQ(view.emptyStateText(), QStringLiteral("Open a checkpoint and press Run"));
  EXPECT_FALSE(view.cellCenter(0, 0).has_value());
}

TEST_F(HeatmapViewTest, SmallMapShowsEveryTokenOnBothAxes) {
  show(causalPattern(storyTokens()));
  ASSERT_TRUE(view.hasHeatmap());
  const QStringList expected{"Once", " upon", " a", " time", ","};
  EXPECT_EQ(view.keyTickLabels(), expected);
  EXPECT_EQ(view.queryTickLabels(), expected);
}

TEST_F(HeatmapViewTest, QueryZeroIsAtTheTopAndCellsAreOnAGrid) {
  show(causalPattern(storyTokens()));
  const QPoint c00 = *view.cellCenter(0, 0);
  const QPoint c01 = *view.cellCenter(0, 1);
  const QPoint c10 = *view.cellCenter(1, 0);
  const QPoint c44 = *view.cellCenter(4, 4);
  EXPECT_LT(c00.y(), c10.y());  // query grows downwards
  EXPECT_LT(c00.x(), c01.x());  // key grows to the right
  EXPECT_EQ(c00.y(), c01.y());
  EXPECT_EQ(c00.x(), c10.x());
  // Equal steps: the 4 cells between c00 and c44 have the same pitch as c00 -> c01.
  EXPECT_NEAR(c44.x() - c00.x(), 4 * (c01.x() - c00.x()), 2);
  EXPECT_NEAR(c44.y() - c00.y(), 4 * (c10.y() - c00.y()), 2);
  EXPECT_FALSE(view.cellCenter(5, 0).has_value());
  EXPECT_FALSE(view.cellCenter(0, -1).has_value());
}

TEST_F(HeatmapViewTest, CellsArePaintedWithTheSharedColormapAndMaskedCellsGrey) {
  const HeatmapData data = causalPattern(storyTokens());
  show(data);
  const QImage image = view.plotWidget()->grab().toImage();
  auto pixel = [&](int query, int key) { return pixelAt(image, *view.cellCenter(query, key)); };
  auto expectColor = [](QRgb actual, QRgb expected, const char* what) {
    EXPECT_NEAR(qRed(actual), qRed(expected), 3) << what;
    EXPECT_NEAR(qGreen(actual), qGreen(expected), 3) << what;
    EXPECT_NEAR(qBlue(actual), qBlue(expected), 3) << what;
  };
  expectColor(pixel(0, 0), colormapColor(1.0), "query 0 -> key 0 has weight 1");
  expectColor(pixel(3, 1), colormapColor(data.at(3, 1), {0.0, 1.0}), "query 3 -> key 1");
  expectColor(pixel(4, 4), colormapColor(data.at(4, 4), {0.0, 1.0}), "query 4 -> key 4");
  EXPECT_EQ(pixel(0, 4), nanCellColor().rgb());  // masked
  EXPECT_EQ(pixel(2, 3), nanCellColor().rgb());
}

TEST_F(HeatmapViewTest, HoverAtCellCentreEmitsQueryKeyValue) {
  const HeatmapData data = causalPattern(storyTokens());
  show(data);
  QSignalSpy spy(&view, &HeatmapView::hovered);
  hover(3, 1, spy);
  ASSERT_EQ(spy.count(), 1);
  EXPECT_EQ(spy.at(0).at(0).toInt(), 3);
  EXPECT_EQ(spy.at(0).at(1).toInt(), 1);
  // Hand-computed: w = exp(-0.7 (3 - k)) + [k == 0] -> 0.24660 / 2.86565 = 0.08605.
  EXPECT_NEAR(spy.at(0).at(2).toDouble(), 0.086053, 1e-5);
  EXPECT_FLOAT_EQ(static_cast<float>(spy.at(0).at(2).toDouble()), data.at(3, 1));
  EXPECT_EQ(view.hoverText(), QStringLiteral("query 3 ' time' \u2192 key 1 ' upon': 0.0861"));

  hover(2, 2, spy);
  ASSERT_EQ(spy.count(), 2);
  EXPECT_EQ(spy.at(1).at(0).toInt(), 2);
  EXPECT_EQ(spy.at(1).at(1).toInt(), 2);
  EXPECT_FLOAT_EQ(static_cast<float>(spy.at(1).at(2).toDouble()), data.at(2, 2));
}

TEST_F(HeatmapViewTest, HoverNamesEachTokensIdAndRawPieceWhenTheMapHasThem) {
  HeatmapData data = causalPattern(storyTokens());
  for (size_t i = 0; i < data.row_labels.size(); ++i) {
    data.token_ids.push_back(static_cast<int64_t>(100 + i));
    data.token_pieces.push_back("\u2581piece" + std::to_string(i));
  }
  show(data);
  QSignalSpy spy(&view, &HeatmapView::hovered);
  hover(3, 1, spy);
  ASSERT_EQ(spy.count(), 1);
  EXPECT_EQ(view.hoverText(), QStringLiteral("query 3 ' time' [id 103, piece '\u2581piece3'] \u2192 "
                                             "key 1 ' upon' [id 101, piece '\u2581piece1']: 0.0861"));
}

TEST_F(HeatmapViewTest, HoverOnMaskedCellReportsNaN) {
  show(causalPattern(storyTokens()));
  QSignalSpy spy(&view, &HeatmapView::hovered);
  hover(0, 4, spy);
  ASSERT_EQ(spy.count(), 1);
  EXPECT_EQ(spy.at(0).at(0).toInt(), 0);
  EXPECT_EQ(spy.at(0).at(1).toInt(), 4);
  EXPECT_TRUE(std::isnan(spy.at(0).at(2).toDouble()));
  EXPECT_EQ(view.hoverText(), QStringLiteral("query 0 'Once' \u2192 key 4 ',': masked"));
}

TEST_F(HeatmapViewTest, PooledMapLabelsSourceIndicesAndHoverShowsTheBlock) {
  show(test_data::pooledMap(300, 100));  // blocks of 3 source positions
  const QStringList keys = view.keyTickLabels();
  const QStringList queries = view.queryTickLabels();
  ASSERT_GE(keys.size(), 5);
  ASSERT_GE(queries.size(), 5);
  EXPECT_LT(keys.size(), 100);  // thinned: 100 labels cannot fit in ~550 px
  EXPECT_EQ(keys.front(), QStringLiteral("0"));
  for (const QString& label : keys + queries) {
    bool ok = false;
    const int position = label.toInt(&ok);
    EXPECT_TRUE(ok) << label.toStdString();
    EXPECT_EQ(position % 3, 0) << label.toStdString();  // first source position of a block
    EXPECT_LT(position, 300);
  }

  QSignalSpy spy(&view, &HeatmapView::hovered);
  hover(10, 20, spy);
  ASSERT_EQ(spy.count(), 1);
  EXPECT_EQ(spy.at(0).at(0).toInt(), 10);
  EXPECT_EQ(spy.at(0).at(1).toInt(), 20);
  EXPECT_NEAR(spy.at(0).at(2).toDouble(), 50.0 / 300.0, 1e-6);
  EXPECT_EQ(view.hoverText(), QStringLiteral("query 30\u201332 \u2192 key 60\u201362: 0.1667"));
}

TEST_F(HeatmapViewTest, LongUnpooledMapLabelsEveryKthTokenWithItsIndex) {
  show(causalPattern(test_data::numberedTokens(200)));
  const QStringList keys = view.keyTickLabels();
  ASSERT_GE(keys.size(), 5);
  EXPECT_LT(keys.size(), 200);
  EXPECT_EQ(keys.front(), QStringLiteral("0 t0"));
  const int step = keys.at(1).section(' ', 0, 0).toInt();
  EXPECT_GT(step, 1);
  EXPECT_EQ(keys.at(1), QStringLiteral("%1 t%1").arg(step));
}

TEST_F(HeatmapViewTest, WheelZoomShowsFewerCellsAndDoubleClickResets) {
  show(causalPattern(storyTokens()));
  QWidget* plot = view.plotWidget();
  const QPoint center = *view.cellCenter(2, 2);
  QWheelEvent wheel(center, plot->mapToGlobal(center), QPoint(), QPoint(0, 120 * 6), Qt::NoButton,
                    Qt::NoModifier, Qt::NoScrollPhase, false);
  QCoreApplication::sendEvent(plot, &wheel);
  settle();
  EXPECT_LT(view.keyTickLabels().size(), 5);
  EXPECT_TRUE(view.keyTickLabels().contains(QStringLiteral(" a")));  // zoomed around cell 2

  QTest::mouseDClick(plot, Qt::LeftButton, Qt::NoModifier, center);
  settle();
  EXPECT_EQ(view.keyTickLabels().size(), 5);
}

TEST_F(HeatmapViewTest, ColourRangeIsUnitForWeightsDataRangeOtherwiseAndCanBeFixed) {
  show(causalPattern(storyTokens()));
  EXPECT_DOUBLE_EQ(view.colorRange().lo, 0.0);
  EXPECT_DOUBLE_EQ(view.colorRange().hi, 1.0);

  HeatmapData scores = test_data::constantMap(2, 3, 0.0f, "score");
  scores.values = {-2.0f, 1.0f, 3.5f, 0.0f, 1.0f, 2.0f};
  show(scores);
  EXPECT_DOUBLE_EQ(view.colorRange().lo, -2.0);
  EXPECT_DOUBLE_EQ(view.colorRange().hi, 3.5);

  view.setColorRange(-1.0, 1.0);
  view.setColorRange(2.0, 1.0);  // invalid: ignored
  show(causalPattern(storyTokens()));  // a fixed range survives a new map
  EXPECT_DOUBLE_EQ(view.colorRange().lo, -1.0);
  EXPECT_DOUBLE_EQ(view.colorRange().hi, 1.0);
  view.setAutoColorRange();
  EXPECT_DOUBLE_EQ(view.colorRange().lo, 0.0);
}

TEST_F(HeatmapViewTest, SingleCellAndInvalidMaps) {
  show(test_data::constantMap(1, 1, 0.5f));
  EXPECT_TRUE(view.hasHeatmap());
  EXPECT_EQ(view.keyTickLabels(), QStringList{"0"});
  EXPECT_EQ(view.queryTickLabels(), QStringList{"0"});
  {  // the single cell fills the plot: its centre and points near its corners are painted
    const QImage image = view.plotWidget()->grab().toImage();
    const QPoint c = *view.cellCenter(0, 0);
    const QRgb expected = colormapColor(0.5);
    for (const QPoint& p : {c, c + QPoint(-c.x() / 2, -c.y() / 3), c + QPoint(c.x() / 2, c.y() / 3)})
      EXPECT_NEAR(qGreen(pixelAt(image, p)), qGreen(expected), 3) << p.x() << "," << p.y();
  }
  HeatmapData one_row = test_data::constantMap(1, 4, 0.0f);
  one_row.values = {0.0f, 1.0f, std::numeric_limits<float>::quiet_NaN(), 0.5f};
  show(one_row);
  {
    const QImage image = view.plotWidget()->grab().toImage();
    EXPECT_NEAR(qGreen(pixelAt(image, *view.cellCenter(0, 1))), qGreen(colormapColor(1.0)), 3);
    EXPECT_EQ(pixelAt(image, *view.cellCenter(0, 2)), nanCellColor().rgb());
    EXPECT_NEAR(qGreen(pixelAt(image, *view.cellCenter(0, 3))), qGreen(colormapColor(0.5)), 3);
  }

  HeatmapData broken = causalPattern(storyTokens());
  broken.values.resize(3);
  show(broken);
  EXPECT_FALSE(view.hasHeatmap());
  EXPECT_TRUE(view.emptyStateText().contains("3 values for 5 x 5")) << view.emptyStateText().toStdString();

  show(causalPattern(storyTokens()));
  view.clear();
  EXPECT_FALSE(view.hasHeatmap());
  EXPECT_EQ(view.emptyStateText(), QStringLiteral("Open a checkpoint and press Run"));
}

TEST_F(HeatmapViewTest, ExportWritesPngAndPdfAndNothingElse) {
  show(causalPattern(storyTokens()));
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  QString error = "untouched";
  const QString png = dir.filePath("map.png");
  ASSERT_TRUE(view.exportPng(png, 640, 480, &error)) << error.toStdString();
  EXPECT_TRUE(error.isEmpty());
  const QImage image(png);
  ASSERT_FALSE(image.isNull());
  EXPECT_EQ(image.size(), QSize(640, 480));

  const QString pdf = dir.filePath("map.pdf");
  ASSERT_TRUE(view.exportPdf(pdf, &error)) << error.toStdString();
  QFile file(pdf);
  ASSERT_TRUE(file.open(QIODevice::ReadOnly));
  EXPECT_GT(file.size(), 1000);
  EXPECT_EQ(file.read(5), QByteArray("%PDF-"));

  // Overwriting works and leaves no temporary file behind.
  ASSERT_TRUE(view.exportPng(png, 320, 240, &error)) << error.toStdString();
  EXPECT_EQ(QImage(png).size(), QSize(320, 240));
  const QStringList files =
      QDir(dir.path()).entryList(QDir::Files | QDir::Hidden | QDir::NoDotAndDotDot, QDir::Name);
  EXPECT_EQ(files, (QStringList{"map.pdf", "map.png"}));
}

TEST_F(HeatmapViewTest, ExportIntoMissingFolderFailsCleanly) {
  show(causalPattern(storyTokens()));
  QTemporaryDir dir;
  const QString png = dir.filePath("no/such/folder/map.png");
  const QString pdf = dir.filePath("no/such/folder/map.pdf");
  QString error;
  EXPECT_FALSE(view.exportPng(png, 100, 100, &error));
  EXPECT_TRUE(error.contains(png)) << error.toStdString();
  EXPECT_TRUE(error.contains("does not exist")) << error.toStdString();
  EXPECT_FALSE(QFileInfo::exists(png));
  error.clear();
  EXPECT_FALSE(view.exportPdf(pdf, &error));
  EXPECT_TRUE(error.contains("does not exist")) << error.toStdString();
  EXPECT_FALSE(QFileInfo::exists(pdf));
  EXPECT_TRUE(QDir(dir.path()).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot).isEmpty());
}

TEST_F(HeatmapViewTest, ExportWithNothingShownFails) {
  QTemporaryDir dir;
  QString error;
  EXPECT_FALSE(view.exportPng(dir.filePath("empty.png"), 100, 100, &error));
  EXPECT_TRUE(error.contains("no heatmap")) << error.toStdString();
  EXPECT_FALSE(QFileInfo::exists(dir.filePath("empty.png")));
}

}  // namespace
}  // namespace poslens

namespace poslens {
namespace {

TEST_F(HeatmapViewTest, ZoomIsAnnouncedAndFollowedWithoutEcho) {
  show(causalPattern(storyTokens()));
  HeatmapView other;
  other.resize(400, 400);
  other.setHeatmap(causalPattern(storyTokens()));
  QSignalSpy changed(&view, &HeatmapView::viewChanged);
  QSignalSpy other_changed(&other, &HeatmapView::viewChanged);
  QObject::connect(&view, &HeatmapView::viewChanged, &other, &HeatmapView::setViewRange);
  other.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&other));
  settle();
  const auto before = other.cellCenter(3, 2);
  ASSERT_TRUE(before.has_value());
  // A wheel zoom is a user change: announced, and the follower takes the same ranges.
  QWheelEvent wheel(QPointF(300, 300), view.plotWidget()->mapToGlobal(QPointF(300, 300)), {},
                    {0, 120}, Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
  QCoreApplication::sendEvent(view.plotWidget(), &wheel);
  settle();
  ASSERT_GT(changed.count(), 0);
  EXPECT_EQ(other_changed.count(), 0) << "a followed range is not announced again";
  EXPECT_NE(other.cellCenter(3, 2), before) << "the follower zoomed too";
  // A linked hover shows the read-out without a hovered() signal.
  QSignalSpy hovered(&other, &HeatmapView::hovered);
  other.showHover(3, 2);
  EXPECT_FALSE(other.hoverText().isEmpty());
  EXPECT_EQ(hovered.count(), 0);
}

TEST_F(HeatmapViewTest, CsvHasOneNamedRowPerQueryAndEmptyMaskedCells) {
  HeatmapData d;
  d.rows = d.cols = d.source_rows = d.source_cols = 2;
  d.values = {1.0f, NAN, 0.25f, 0.5f};
  d.row_labels = d.col_labels = {"a,b", "c"};
  show(d);
  EXPECT_EQ(view.csv(), QStringLiteral("query \\ key,\"0:a,b\",1:c\n\"0:a,b\",1,\n1:c,0.25,0.5\n"));
  // Pooled: rows and columns are named by their block's first source position.
  show(test_data::pooledMap(300, 100));
  const QStringList lines = view.csv().split('\n', Qt::SkipEmptyParts);
  ASSERT_EQ(lines.size(), 101);
  EXPECT_TRUE(lines[0].startsWith(QStringLiteral("query \\ key,0:t0,3:t3,6:t6,"))) << lines[0].toStdString();
  EXPECT_TRUE(lines[2].startsWith(QStringLiteral("3:t3,"))) << lines[2].toStdString();
  const auto path = QDir::temp().filePath("poslens_heatmap.csv");
  QString error;
  ASSERT_TRUE(view.exportCsv(path, &error)) << error.toStdString();
  QFile file(path);
  ASSERT_TRUE(file.open(QIODevice::ReadOnly));
  EXPECT_EQ(QString::fromUtf8(file.readAll()), view.csv());
  view.clear();
  EXPECT_FALSE(view.exportCsv(path, &error));
  EXPECT_TRUE(error.contains("no heatmap")) << error.toStdString();
}

TEST_F(HeatmapViewTest, TwoViewsExportSideBySide) {
  show(causalPattern(storyTokens()));
  HeatmapView other;
  other.resize(720, 640);
  other.setHeatmap(causalPattern(storyTokens()));
  const QDir dir = QDir::temp();
  QString error;
  const auto png = dir.filePath("poslens_side_by_side.png");
  ASSERT_TRUE(exportPlotsSideBySide({view.plot(), other.plot()}, png, FigureFormat::Png, 500, 400,
                                    "pair", &error)) << error.toStdString();
  const QImage image(png);
  EXPECT_EQ(image.size(), QSize(1000, 400));
  // Both halves are drawn (not white): the map's cells sit near each half's centre.
  EXPECT_NE(image.pixel(250, 200), qRgb(255, 255, 255));
  EXPECT_NE(image.pixel(750, 200), qRgb(255, 255, 255));
  for (const char* name : {"poslens_side_by_side.pdf", "poslens_side_by_side.svg"}) {
    const auto path = dir.filePath(name);
    ASSERT_TRUE(exportPlotsSideBySide({view.plot(), other.plot()}, path, figureFormatForPath(path),
                                      500, 400, "pair", &error)) << error.toStdString();
    EXPECT_GT(QFileInfo(path).size(), 1000) << name;
  }
  EXPECT_FALSE(exportPlotsSideBySide({}, png, FigureFormat::Png, 500, 400, "none", &error));
}

}  // namespace
}  // namespace poslens

namespace poslens {
namespace {

TEST_F(HeatmapViewTest, ARegionAtFullResolutionIsDrawnOverThePooledMapAndReadOutExactly) {
  show(test_data::pooledMap(300, 100));  // cells of 3 positions
  HeatmapData region;
  region.rows = 30;
  region.cols = 45;
  region.source_rows = 30;
  region.source_cols = 45;
  region.row_offset = 30;
  region.col_offset = 15;
  for (int64_t r = 0; r < region.rows; ++r)
    for (int64_t c = 0; c < region.cols; ++c)
      region.values.push_back(static_cast<float>(30 + r) + static_cast<float>(15 + c) / 1000.0f);  // q.k
  view.setDetail(region);
  ASSERT_TRUE(view.detail().has_value());
  // Overview cell (10, 15) covers positions 30-32 × 45-47: inside the region (rows 30-59,
  // keys 15-59), and its centre is position (31, 46), which the read-out names exactly.
  QSignalSpy spy(&view, &HeatmapView::hovered);
  hover(10, 15, spy);
  EXPECT_EQ(view.hoverText(), QStringLiteral("query 31 \u2192 key 46: 31.0460"));
  // Outside the region the pooled cell is read.
  hover(50, 60, spy);
  EXPECT_TRUE(view.hoverText().contains(QStringLiteral("query 150\u2013152"))) << view.hoverText().toStdString();
  // The visible source range, for asking for a region: the whole map now.
  const auto visible = view.visibleSource();
  ASSERT_TRUE(visible.has_value());
  EXPECT_EQ(visible->q0, 0);
  EXPECT_EQ(visible->q1, 300);
  view.clearDetail();
  EXPECT_FALSE(view.detail().has_value());
  view.setDetail(region);
  show(test_data::pooledMap(300, 100));
  EXPECT_FALSE(view.detail().has_value()) << "a new map drops the old region";
}

}  // namespace
}  // namespace poslens
