// FrequencyPlot (widgets/frequency_plot.h) on hand-made curves: which components it shows by
// default, its CSV tables, the series row coming and going, and figure export.
#include <gtest/gtest.h>

#include <QTemporaryDir>
#include <qcustomplot.h>

#include <cmath>

#include "widgets/figure_export.h"
#include "widgets/frequency_plot.h"

namespace poslens {
namespace {

/// Five components over T = 4 keys; c2 activated, c4 past a HoPE cut at 4.
FrequencyCurves sample_curves() {
  FrequencyCurves c;
  c.title = "L0 head mean · test";
  c.T = 4;
  c.L = 8;
  c.kept_components = 4;
  c.theta = {1.0, 0.5, 0.6, 0.01, 0.0};
  c.activated = {false, false, true, false, false};
  c.scores = {1, 2, 3, 4};
  c.components = {{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}, {0, 0, 0, 0}};
  c.vaf = {10, 50, 5, 30, std::nan("")};
  c.key_labels = {"<s>", "a", "b,\"c\"", "d"};
  return c;
}

TEST(FrequencyPlot, DefaultComponentsAreTheActivatedOnesAndTheTopVaf) {
  FrequencyPlot plot;
  plot.setCurves(sample_curves());
  EXPECT_EQ(plot.defaultComponents(), (std::vector<int>{0, 1, 2, 3}));  // 2 + top three: 1, 3, 0
  EXPECT_EQ(plot.shownComponents(), plot.defaultComponents());
  plot.setShownComponents({4, 9, 4, -1});  // out-of-range and repeated ones ignored
  EXPECT_EQ(plot.shownComponents(), (std::vector<int>{4}));
}

TEST(FrequencyPlot, CsvTablesHoldTheCurvesAndVaf) {
  FrequencyPlot plot;
  plot.setCurves(sample_curves());
  const QStringList curves = plot.curvesCsv().split('\n', Qt::SkipEmptyParts);
  ASSERT_EQ(curves.size(), 5);
  EXPECT_EQ(curves[0], "key_pos,distance,token,overall,c0,c1,c2,c3,c4");
  EXPECT_EQ(curves[3], "2,1,\"b,\"\"c\"\"\",3,0,0,1,0,0");
  const QStringList vaf = plot.vafCsv().split('\n', Qt::SkipEmptyParts);
  ASSERT_EQ(vaf.size(), 6);
  EXPECT_EQ(vaf[0], "component,theta,wavelength,activated,rotates,turns_in_L,beyond_critical,yarn_ramp,vaf_percent");
  // L = 8: c0 turns 8·1/2π = 1.27 times (the one component before the critical dimension, and
  // inside YaRN's 1–32 turns); c2 (θ = 0.6) 0.76 times, activated.
  const QStringList c0 = vaf[1].split(','), c2 = vaf[3].split(',');
  EXPECT_EQ(c0[5].left(5), "1.273");
  EXPECT_EQ(c0.mid(6), (QStringList{"0", "1", "10"})) << "before critical, in the YaRN ramp, VAF";
  EXPECT_EQ(c2.mid(0, 2), (QStringList{"2", "0.6"}));
  EXPECT_EQ(c2.mid(3, 2), (QStringList{"1", "1"})) << "activated, rotates";
  EXPECT_EQ(c2.mid(6), (QStringList{"1", "0", "5"})) << "beyond critical, not in the ramp, VAF";
  EXPECT_EQ(vaf[5], "4,0,inf,0,0,0,1,0,") << "past the cut: does not rotate, VAF undefined";
}

TEST(FrequencyPlot, SeriesRowComesAndGoesAndFiguresExport) {
  FrequencyPlot plot;
  plot.resize(900, 500);
  plot.setCurves(sample_curves());
  const int without = plot.plot()->axisRectCount();
  VafSeries series;
  series.names = {"step-000000", "step-000100"};
  series.steps = {0, 100};
  series.vaf = {{1, 2, 3, 4, 0}, {2, 3, 4, 5, 0}};
  series.theta = sample_curves().theta;
  series.activated = sample_curves().activated;
  plot.setSeries(series);
  EXPECT_EQ(plot.plot()->axisRectCount(), without + 1);
  EXPECT_EQ(plot.seriesCsv().split('\n', Qt::SkipEmptyParts).size(), 3);
  QTemporaryDir dir;
  QString error;
  for (const char* name : {"f.png", "f.svg"}) {
    const QString path = dir.filePath(name);
    ASSERT_TRUE(plot.exportFigure(path, figureFormatForPath(path), &error)) << error.toStdString();
    EXPECT_GT(QFileInfo(path).size(), 1000);
  }
  QStringList written;
  ASSERT_TRUE(plot.exportCsv(dir.filePath("d.csv"), &written, &error));
  EXPECT_EQ(written.size(), 3) << "curves, VAF and series";
  plot.setSeries({});
  EXPECT_EQ(plot.plot()->axisRectCount(), without);
  FrequencyPlot empty;
  EXPECT_FALSE(empty.exportCsv(dir.filePath("e.csv"), &written, &error));
  EXPECT_TRUE(error.contains("run the probe"));
}

TEST(FrequencyPlot, DifferenceViewSubtractsTheFirstCheckpoint) {
  FrequencyPlot plot;
  plot.resize(900, 500);
  auto first = sample_curves(), last = sample_curves();
  for (auto& v : last.scores) v += 2;  // the last checkpoint's overall curve is the first's + 2
  plot.setCurves(last);
  VafSeries series;
  series.names = {"step-000000", "step-000100"};
  series.steps = {0, 100};
  series.vaf = {{1, 2, 3, 4, 0}, {2, 5, 4, 5, 0}};
  series.theta = first.theta;
  series.activated = first.activated;
  plot.setSeries(series, {first, last});
  const auto graph_named = [&](const QString& name) -> QCPGraph* {
    for (int i = 0; i < plot.plot()->graphCount(); ++i)
      if (plot.plot()->graph(i)->name() == name) return plot.plot()->graph(i);
    return nullptr;
  };
  ASSERT_NE(graph_named("overall"), nullptr);
  plot.setDifference(true);
  EXPECT_EQ(graph_named("overall"), nullptr);
  const auto* overall = graph_named("overall − first checkpoint's");
  ASSERT_NE(overall, nullptr);
  for (auto it = overall->data()->constBegin(); it != overall->data()->constEnd(); ++it)
    EXPECT_DOUBLE_EQ(it->value, 2.0);
  const auto* vaf1 = graph_named("VAF c1");
  ASSERT_NE(vaf1, nullptr);
  EXPECT_DOUBLE_EQ((vaf1->data()->constBegin() + 1)->value, 3.0);  // 5 − 2
  EXPECT_DOUBLE_EQ(vaf1->data()->constBegin()->value, 0.0);
  plot.setDifference(false);
  EXPECT_NE(graph_named("overall"), nullptr);
}

}  // namespace
}  // namespace poslens
