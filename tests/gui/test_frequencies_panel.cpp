// The Frequencies panel as a user drives it: open a RoPE checkpoint, run the probe (on the
// worker, with progress and Cancel), read the curves, compare the run folder's checkpoints,
// export the figure and its data; the Position map panel beside it. Offscreen Qt, the real
// worker thread and models.
// LibTorch before Qt: Qt's `slots` macro breaks torch headers.
#include <ATen/ATen.h>

#include "analysis/text_decomposition.h"
#include "core/formats/safetensors.h"
#include "core/runtime/checkpoint.h"
#include "core/tokenizers/tokenizer.h"
#include "reference_ids.h"

#include <QCheckBox>
#include <QImage>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTest>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "app/gui/main_window.h"
#include "app/gui/panels/frequencies_panel.h"
#include "app/gui/panels/heads_panel.h"
#include "app/gui/panels/position_map_panel.h"
#include "gui_test_util.h"
#include "widgets/figure_export.h"
#include "widgets/frequency_plot.h"
#include "widgets/head_grid.h"
#include "widgets/heatmap_view.h"

namespace poslens::gui {
namespace {

using test::arrived;

QString demo(const char* name) {
  return QString::fromStdString(
      (std::filesystem::path(POSLENS_SOURCE_DIR) / "resources" / "demos" / name).string());
}

FrequenciesPanel* frequencies(MainWindow& w) {
  for (const auto& panel : w.panels())
    if (auto* p = qobject_cast<FrequenciesPanel*>(panel.get())) return p;
  return nullptr;
}

QPushButton* button(QWidget* parent, const QString& text) {
  for (auto* b : parent->findChildren<QPushButton*>())
    if (b->text() == text) return b;
  return nullptr;
}

class FrequenciesWindow : public ::testing::Test {
 protected:
  void open(const QString& path) {
    QSignalSpy opened(window.session(), &Session::modelOpened);
    window.session()->setLoadOptions("cpu", "float32");
    window.openCheckpoint(path);
    ASSERT_TRUE(arrived(opened, 30000));
    panel = frequencies(window);
    ASSERT_NE(panel, nullptr);
  }
  MainWindow window;
  FrequenciesPanel* panel = nullptr;
};

TEST_F(FrequenciesWindow, ProbeShowsCurvesVafAndExports) {
  open(demo("text-rope-series/step-001500"));
  QSignalSpy ready(window.session(), &Session::jobFinished);
  QSignalSpy progress(window.session(), &Session::progress);
  auto* run = button(panel->widget(), "Run probe");
  ASSERT_NE(run, nullptr);
  ASSERT_TRUE(run->isEnabled());
  QTest::mouseClick(run, Qt::LeftButton);
  ASSERT_TRUE(arrived(ready, 60000));
  EXPECT_EQ(ready.at(0).at(0).toString(), "probe");
  EXPECT_GT(progress.count(), 0);
  ASSERT_TRUE(panel->probe());
  const auto summary = *panel->probe();
  EXPECT_EQ(summary.n_layers, 2);
  EXPECT_TRUE(summary.per_head);
  const auto& curves = panel->plot()->curves();
  EXPECT_EQ(curves.T, 128) << "T defaults to the training length";
  EXPECT_EQ(curves.n_components(), 16);
  EXPECT_EQ(curves.head, -1);
  ASSERT_EQ(curves.activated.size(), 16u);
  EXPECT_TRUE(curves.activated[6]) << "theta_6 = 10000^(-12/32) lies in (pi/128, 2pi/128)";
  EXPECT_TRUE(panel->hasFigure());

  // The selected head of the Heads panel, when asked for.
  panel->widget()->findChild<QCheckBox*>()->setChecked(true);
  window.session()->selectHead(1, 1);
  QCoreApplication::processEvents();
  EXPECT_EQ(panel->plot()->curves().head, 1);
  EXPECT_EQ(panel->plot()->curves().layer, 1);

  const auto dir = test::scratch_dir();
  QString error;
  for (const char* name : {"f.png", "f.svg", "f.pdf"}) {
    const QString path = QString::fromStdString((dir / name).string());
    ASSERT_TRUE(panel->exportFigure(path, figureFormatForPath(path), &error)) << error.toStdString();
    EXPECT_GT(std::filesystem::file_size(dir / name), 1000u);
  }
  QStringList written;
  ASSERT_TRUE(panel->exportData(QString::fromStdString((dir / "f.csv").string()), &written, &error));
  EXPECT_EQ(written.size(), 2);
  std::ifstream vaf(dir / "f-vaf.csv");
  std::string header;
  std::getline(vaf, header);
  EXPECT_EQ(header, "component,theta,wavelength,activated,rotates,turns_in_L,beyond_critical,yarn_ramp,vaf_percent");
}

TEST_F(FrequenciesWindow, TheInputIsDecomposedLayerByLayer) {
  open(demo("text-rope-series/step-001500"));
  window.setInputText("Q: Why?\nA: Because.");
  QSignalSpy ready(window.session(), &Session::jobFinished);
  QTest::mouseClick(button(panel->widget(), "On input"), Qt::LeftButton);
  ASSERT_TRUE(arrived(ready, 30000));
  ASSERT_TRUE(panel->probe());
  auto summary = *panel->probe();
  EXPECT_TRUE(summary.from_input);
  ASSERT_NE(summary.find(summary.curves, 0, -1), nullptr);
  EXPECT_EQ(summary.find(summary.curves, 1, -1), nullptr) << "one layer per job";
  const auto& curves = panel->plot()->curves();
  EXPECT_EQ(curves.T, 20) << "<bos> + 19 characters";
  EXPECT_EQ(curves.key_labels.size(), 20u);
  EXPECT_EQ(curves.layer, 0);
  // Choosing layer 1 decomposes it.
  auto* layer = panel->widget()->findChildren<QSpinBox*>().at(3);
  layer->setValue(1);
  ASSERT_TRUE(arrived(ready, 30000, 2));
  EXPECT_EQ(panel->plot()->curves().layer, 1);
}

// "component map": one rotary component's term over every query and key of the input, the
// selected head's or the head mean, exported as the figure and CSV; values are those of
// decompose_text on the same input, masked keys grey (NaN).
TEST_F(FrequenciesWindow, TheComponentMapShowsOneComponentOverTheWholeInput) {
  open(demo("text-rope-series/step-001500"));
  window.setInputText("Q: Why?\nA: Because.");
  QSignalSpy ready(window.session(), &Session::jobFinished);
  panel->showMap(true, 6);
  EXPECT_TRUE(panel->showingMap());
  EXPECT_FALSE(panel->map()->hasHeatmap()) << "nothing decomposed yet";
  QTest::mouseClick(button(panel->widget(), "On input"), Qt::LeftButton);
  ASSERT_TRUE(arrived(ready, 30000));
  ASSERT_TRUE(panel->map()->hasHeatmap());
  const HeatmapData& shown = panel->map()->heatmap();
  EXPECT_EQ(shown.rows, 20);
  EXPECT_EQ(shown.cols, 20);
  EXPECT_EQ(shown.head, -1);
  EXPECT_EQ(shown.layer, 0);
  EXPECT_EQ(shown.col_labels.size(), 20u);
  EXPECT_THAT(shown.title, ::testing::HasSubstr("L0 head mean · component c6 of the scores"));

  // The same numbers as the analysis computes on its own.
  const auto loaded = load_checkpoint(demo("text-rope-series/step-001500").toStdString(), {"cpu", "float32", ""});
  const auto d = decompose_text(loaded, loaded.tokenizer->encode("Q: Why?\nA: Because.", true), 0);
  ASSERT_EQ(d.components.size(-1), 20);
  const auto mean = d.components.mean(0)[6];
  EXPECT_NEAR(shown.at(19, 3), mean[19][3].item<float>(), 1e-6);
  EXPECT_NEAR(shown.at(7, 7), mean[7][7].item<float>(), 1e-6);
  EXPECT_TRUE(std::isnan(shown.at(3, 19))) << "a masked key";

  // The selected head, then another component.
  panel->widget()->findChild<QCheckBox*>()->setChecked(true);
  window.session()->selectHead(0, 1);
  QCoreApplication::processEvents();
  EXPECT_EQ(panel->map()->heatmap().head, 1);
  EXPECT_NEAR(panel->map()->heatmap().at(19, 3), d.components[1][6][19][3].item<float>(), 1e-6);
  panel->widget()->findChild<QSpinBox*>("mapComponent")->setValue(12);
  EXPECT_NEAR(panel->map()->heatmap().at(19, 3), d.components[1][12][19][3].item<float>(), 1e-6);

  const auto dir = test::scratch_dir();
  QString error;
  for (const char* name : {"m.png", "m.svg", "m.pdf"}) {
    const QString path = QString::fromStdString((dir / name).string());
    ASSERT_TRUE(panel->exportFigure(path, figureFormatForPath(path), &error)) << error.toStdString();
    EXPECT_GT(std::filesystem::file_size(dir / name), 1000u);
  }
  QStringList written;
  ASSERT_TRUE(panel->exportData(QString::fromStdString((dir / "m.csv").string()), &written, &error));
  EXPECT_EQ(written, QStringList{QString::fromStdString((dir / "m.csv").string())});
  std::ifstream csv(dir / "m.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header.rfind("query \\ key,0:", 0), 0u) << header;

  // Back to the curves: the curve figure again.
  panel->showMap(false);
  EXPECT_FALSE(panel->showingMap());
  EXPECT_EQ(panel->plot()->curves().T, 20);
}

TEST_F(FrequenciesWindow, SeriesComparisonGivesVafPerStep) {
  open(demo("text-rope-series/step-000300"));
  auto* series = button(panel->widget(), "Compare series");
  ASSERT_NE(series, nullptr);
  ASSERT_TRUE(series->isEnabled()) << "a step-NNNNNN folder of a run";
  panel->widget()->findChild<QSpinBox*>()->setValue(16);  // T: keep the test short
  QSignalSpy ready(window.session(), &Session::jobFinished);
  QTest::mouseClick(series, Qt::LeftButton);
  ASSERT_TRUE(arrived(ready, 120000));
  ASSERT_TRUE(panel->series());
  const auto summary = *panel->series();
  ASSERT_EQ(summary.per_layer.size(), 2u);
  EXPECT_EQ(summary.per_layer[0].steps.size(), 11u);
  EXPECT_EQ(summary.per_layer[0].steps.back(), 1500);
  EXPECT_TRUE(panel->plot()->hasSeries());
  EXPECT_EQ(panel->plot()->seriesCsv().count('\n'), 12) << "header + 11 checkpoints";
}

TEST(FrequenciesRunFolder, OpeningARunFolderOpensItsLastCheckpointAndComparesTheSeries) {
  MainWindow window;
  window.session()->setLoadOptions("cpu", "float32");
  QSignalSpy opened(window.session(), &Session::modelOpened);
  QSignalSpy ready(window.session(), &Session::jobFinished);
  window.openCheckpoint(demo("text-rope-series"));
  ASSERT_TRUE(arrived(opened, 30000));
  EXPECT_TRUE(opened.at(0).at(0).value<ModelSummary>().path.endsWith("step-001500"));
  ASSERT_TRUE(arrived(ready, 120000));
  EXPECT_EQ(ready.at(0).at(0).toString(), "compare");
  const auto* panel = window.panel<FrequenciesPanel>();
  ASSERT_TRUE(panel && panel->series());
  EXPECT_EQ(panel->series()->per_layer.at(0).steps.size(), 11u);
}

TEST_F(FrequenciesWindow, ARunningProbeIsCancelled) {
  POSLENS_REQUIRE_STORIES();
  open(test::stories());
  EXPECT_FALSE(button(panel->widget(), "Compare series")->isEnabled());
  QSignalSpy ready(window.session(), &Session::jobFinished);
  QSignalSpy progress(window.session(), &Session::progress);
  QSignalSpy cancelled(window.session(), &Session::cancelled);
  panel->widget()->findChild<QSpinBox*>()->setValue(512);  // about a minute of work on two cores
  panel->runProbe();
  ASSERT_TRUE(arrived(progress, 60000)) << "the probe reports progress while it runs";
  window.session()->cancel();
  ASSERT_TRUE(arrived(cancelled, 1000));
  EXPECT_EQ(cancelled.at(0).at(0).toString(), "probe");
  test::settle(*window.session());
  EXPECT_EQ(ready.count(), 0);
  EXPECT_FALSE(window.session()->isBusy());
}

TEST_F(FrequenciesWindow, PositionMapPanelShowsBothMapsLinkedAndFollowsTheHead) {
  open(demo("text-cope"));
  window.setInputText("Q: Why?\nA: Because.\nQ: Who?");
  PositionMapPanel* positions = nullptr;
  for (const auto& p : window.panels())
    if (auto* candidate = qobject_cast<PositionMapPanel*>(p.get())) positions = candidate;
  ASSERT_NE(positions, nullptr);
  QSignalSpy ready(window.session(), &Session::jobFinished);
  positions->compute();
  ASSERT_TRUE(arrived(ready, 30000));
  const auto view = positions->shown();
  EXPECT_EQ(view.method, "cope");
  EXPECT_FALSE(view.counted.isEmpty()) << "a CoPE head counts tokens";
  EXPECT_TRUE(positions->patternView()->hasHeatmap());
  EXPECT_TRUE(positions->positionView()->hasHeatmap());
  EXPECT_EQ(positions->positionView()->heatmap().rows, 28);  // <bos> + 27 characters
  EXPECT_FALSE(positions->sinkView()->hasHeatmap()) << "no learned sinks: no sink column";
  // Zoom in one view, the other follows.
  positions->patternView()->setViewRange(0, 5, 0, 5);
  emit positions->patternView()->viewChanged(0, 5, 0, 5);
  EXPECT_TRUE(positions->positionView()->cellCenter(2, 2).has_value());
  // A new head selection fetches that head's maps (from the worker's cache).
  window.session()->selectHead(1, 2);
  ASSERT_TRUE(arrived(ready, 30000, 2));
  EXPECT_EQ(positions->shown().head, 2);
  EXPECT_EQ(positions->positionView()->heatmap().layer, 1);

  // Export: both views side by side, and the maps as CSV (one row per visible cell) with the
  // counted tokens beside them.
  const auto dir = std::filesystem::temp_directory_path() / "poslens_position_export";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  QString error;
  for (const char* name : {"pm.png", "pm.pdf", "pm.svg"}) {
    const auto path = dir / name;
    ASSERT_TRUE(positions->exportFigure(QString::fromStdString(path.string()),
                                        figureFormatForPath(name), &error)) << error.toStdString();
    EXPECT_GT(std::filesystem::file_size(path), 1000u) << name;
  }
  QImage png(QString::fromStdString((dir / "pm.png").string()));
  EXPECT_EQ(png.width(), 2400) << "two 1200-pixel views side by side";
  QStringList written;
  ASSERT_TRUE(positions->exportData(QString::fromStdString((dir / "pm.csv").string()), &written, &error))
      << error.toStdString();
  ASSERT_EQ(written.size(), 2);
  std::ifstream csv(dir / "pm.csv");
  std::string header, line;
  std::getline(csv, header);
  EXPECT_EQ(header, "layer,head,q_pos,k_pos,query_token,key_token,pattern,position_only");
  int rows = 0;
  while (std::getline(csv, line)) ++rows;
  EXPECT_EQ(rows, 28 * 29 / 2) << "every causal (query, key) cell once";
  std::ifstream counted(dir / "pm-counted.csv");
  std::getline(counted, header);
  EXPECT_EQ(header, "rank,token,id,mean_gate,count");
  int types = 0;
  while (std::getline(counted, line)) ++types;
  EXPECT_EQ(types, static_cast<int>(positions->shown().counted_tokens.size()));
  EXPECT_GT(types, 10);
}

// gpt-oss: the learned sink's share of each row in a column between the maps — HF's own
// patterns leave that mass to the sink (tests/data/models/gpt_oss) — following the maps' rows,
// exported beside them (figure and CSV).
TEST_F(FrequenciesWindow, PositionMapPanelShowsTheLearnedSinkColumn) {
  const auto dir = std::filesystem::path(POSLENS_SOURCE_DIR) / "tests/data/models/gpt_oss";
  open(QString::fromStdString(dir.string()));
  const SafetensorsFile ref((dir / "reference.safetensors").string());
  QString text;
  for (const int64_t id : poslens::test::reference_ids(dir.string())) text += (text.isEmpty() ? "" : ",") + QString::number(id);
  window.session()->setInput({text, true, QString()});
  PositionMapPanel* positions = window.panel<PositionMapPanel>();
  ASSERT_NE(positions, nullptr);
  window.session()->selectHead(1, 2);
  QSignalSpy ready(window.session(), &Session::jobFinished);
  positions->compute();
  ASSERT_TRUE(arrived(ready, 30000));
  ASSERT_EQ(positions->shown().head, 2);
  const HeatmapData& sink = positions->sinkView()->heatmap();
  ASSERT_TRUE(positions->sinkView()->hasHeatmap());
  EXPECT_FALSE(positions->sinkView()->isHidden());
  ASSERT_EQ(sink.rows, 13);
  ASSERT_EQ(sink.cols, 1);
  const auto hf = 1.0 - ref.load("attentions.1").to(at::kFloat)[0][2].sum(-1);
  for (int64_t q = 0; q < 13; ++q) EXPECT_NEAR(sink.at(q, 0), hf[q].item<float>(), 1e-5) << "row " << q;
  EXPECT_THAT(positions->shown().pattern.title, ::testing::HasSubstr("the learned sink takes"));
  // The column follows the maps' zoom.
  ASSERT_TRUE(positions->sinkView()->visibleSource().has_value());
  EXPECT_EQ(positions->sinkView()->visibleSource()->q1, 13);
  emit positions->patternView()->viewChanged(0, 5, 2, 6);
  const auto rows = positions->sinkView()->visibleSource();
  ASSERT_TRUE(rows.has_value());
  EXPECT_GE(rows->q0, 1);
  EXPECT_LE(rows->q0, 3);
  EXPECT_LE(rows->q1, 8) << "rows 2..6 of 13";
  EXPECT_EQ(std::make_pair(rows->k0, rows->k1), std::make_pair(int64_t{0}, int64_t{1})) << "the one column stays";

  const auto out = std::filesystem::temp_directory_path() / "poslens_sink_export";
  std::filesystem::remove_all(out);
  std::filesystem::create_directories(out);
  QString error;
  ASSERT_TRUE(positions->exportFigure(QString::fromStdString((out / "pm.png").string()), FigureFormat::Png, &error))
      << error.toStdString();
  EXPECT_EQ(QImage(QString::fromStdString((out / "pm.png").string())).width(), 1200 + 360 + 1200)
      << "pattern | sink column | position map";
  QStringList written;
  ASSERT_TRUE(positions->exportData(QString::fromStdString((out / "pm.csv").string()), &written, &error))
      << error.toStdString();
  ASSERT_EQ(written.size(), 2);
  std::ifstream csv(out / "pm-sink.csv");
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line, "layer,head,q_pos,query_token,sink_share");
  for (int64_t q = 0; q < 13; ++q) {
    ASSERT_TRUE(std::getline(csv, line));
    EXPECT_NEAR(std::stod(line.substr(line.rfind(',') + 1)), hf[q].item<float>(), 1e-5) << line;
  }
}

TEST_F(FrequenciesWindow, HeadGridColouredByAMetricWithARanking) {
  open(demo("text-cope"));
  window.setInputText("Q: Why?\nA: Because.");
  QSignalSpy finished(window.session(), &Session::runFinished);
  window.session()->run();
  ASSERT_TRUE(arrived(finished, 30000));
  HeadsPanel* heads = nullptr;
  for (const auto& p : window.panels())
    if (auto* candidate = qobject_cast<HeadsPanel*>(p.get())) heads = candidate;
  ASSERT_NE(heads, nullptr);
  QSignalSpy metrics(window.session(), &Session::jobFinished);
  heads->colourBy(9);  // position share
  ASSERT_TRUE(arrived(metrics, 30000));
  ASSERT_TRUE(heads->metrics());
  const auto m = *heads->metrics();
  EXPECT_EQ(m.names.size(), 11);
  EXPECT_EQ(m.values.size(), 2u * 4u * 11u);
  // The induction score was measured on a repeated sequence that fits text-cope's n_ctx 128.
  EXPECT_FALSE(std::isnan(m.metric(8)[0]));
  EXPECT_EQ(heads->grid()->metricName(), "position share");
  const auto [lo, hi] = heads->grid()->metricRange();
  EXPECT_GT(lo, 0.0) << "CoPE: the position term makes part of every head's logits";
  EXPECT_LE(hi, 1.0 + 1e-9);
  // Sorted both ways, and filtered by a threshold (the others greyed in the grid).
  const auto share = m.metric(9);
  auto ranked = heads->rankedHeads();
  ASSERT_EQ(ranked.size(), 8u);
  for (size_t i = 1; i < ranked.size(); ++i) EXPECT_GE(share[ranked[i - 1]], share[ranked[i]]);
  heads->setSortDescending(false);
  ranked = heads->rankedHeads();
  for (size_t i = 1; i < ranked.size(); ++i) EXPECT_LE(share[ranked[i - 1]], share[ranked[i]]);
  heads->setSortDescending(true);
  const double median = (lo + hi) / 2;
  heads->setFilter(median);
  ranked = heads->rankedHeads();
  size_t above = 0;
  for (double v : share) above += v >= median;
  EXPECT_EQ(ranked.size(), above);
  for (int i : ranked) EXPECT_GE(share[i], median);
  heads->setFilter(std::nullopt);
  EXPECT_EQ(heads->rankedHeads().size(), 8u);
  const auto csv = std::filesystem::temp_directory_path() / "poslens_heads.csv";
  QString error;
  ASSERT_TRUE(heads->exportMetricsCsv(QString::fromStdString(csv.string()), &error)) << error.toStdString();
  std::ifstream in(csv);
  std::string header, line;
  std::getline(in, header);
  EXPECT_EQ(header, "layer,head,entropy,mean_distance,sink,sink_2,sink_3,sink_4,previous_token,"
                    "duplicate_token,induction,position_share,learned_sink");
  int rows = 0;
  while (std::getline(in, line)) ++rows;
  EXPECT_EQ(rows, 8);
  const auto grid_png = std::filesystem::temp_directory_path() / "poslens_heads.svg";
  ASSERT_TRUE(heads->exportGrid(QString::fromStdString(grid_png.string()), FigureFormat::Svg, &error))
      << error.toStdString();
  heads->colourBy(-1);
  EXPECT_TRUE(heads->grid()->metricName().isEmpty());
}

TEST(FrequenciesSession, ProbeWithoutAModelIsRefused) {
  MainWindow window;
  QSignalSpy failed(window.session(), &Session::failed);
  QSignalSpy jobs(window.session(), &Session::jobStarted);
  window.panel<FrequenciesPanel>()->runProbe();
  ASSERT_EQ(failed.count(), 1);
  EXPECT_EQ(failed.at(0).at(0).toString(), "Nothing to probe");
  EXPECT_EQ(jobs.count(), 0);
}

}  // namespace
}  // namespace poslens::gui
