// The Analyses panel as a user drives it: run frequency usage, massive activations and the
// divergence against another checkpoint on the open model; open files poslens-cli wrote without a
// model (the same view, the same CSV bytes); refuse a foreign, truncated or other-version file
// with one message. Offscreen Qt, the real worker thread, models and CLI.
// LibTorch before Qt: Qt's `slots` macro breaks torch headers.
#include "core/formats/hdf5_reader.h"

#include "app/gui/jobs/analysis_file_readers.h"

#include <H5Cpp.h>

#include <QComboBox>
#include <QSignalSpy>
#include <QTableWidget>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/analysis_registry.h"
#include "app/gui/main_window.h"
#include "app/gui/panels/analyses_panel.h"
#include "app/gui/panels/frequencies_panel.h"
#include "app/gui/panels/position_map_panel.h"
#include "gui_test_util.h"
#include "widgets/curve_plot.h"
#include "widgets/figure_export.h"
#include "widgets/frequency_plot.h"
#include "widgets/heatmap_view.h"

namespace poslens::gui {
namespace {

using test::arrived;

const char* kText = "Q: Why is the sky blue?\nA: Because of the air.";

std::string demo(const char* name) {
  return (std::filesystem::path(POSLENS_SOURCE_DIR) / "resources" / "demos" / name).string();
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Runs poslens-cli with `args`; true when it exits 0.
bool cli(const std::string& args) {
  const std::string command = std::string(POSLENS_CLI_PATH) + " " + args + " >/dev/null 2>&1";
  return std::system(command.c_str()) == 0;
}

class AnalysesWindow : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const auto& p : window.panels())
      if (auto* a = qobject_cast<AnalysesPanel*>(p.get())) panel = a;
    ASSERT_NE(panel, nullptr);
  }
  void open(const std::string& path) {
    QSignalSpy opened(window.session(), &Session::modelOpened);
    window.session()->setLoadOptions("cpu", "float32");
    window.openCheckpoint(QString::fromStdString(path));
    ASSERT_TRUE(arrived(opened, 30000));
    window.setInputText(kText);
  }
  /// Waits for the panel's job; false when it failed (`*message` gets the failure).
  bool finish(QSignalSpy& done, QSignalSpy& failed, QString* message = nullptr) {
    QElapsedTimer clock;
    clock.start();
    while (done.isEmpty() && failed.isEmpty() && clock.elapsed() < 60000) QTest::qWait(10);
    QCoreApplication::processEvents();
    if (!failed.isEmpty() && message) *message = failed.at(0).at(1).toString();
    return !done.isEmpty() && failed.isEmpty();
  }
  MainWindow window;
  AnalysesPanel* panel = nullptr;
};

TEST_F(AnalysesWindow, FrequencyUsageRunsOnTheModelAndItsCsvIsTheCliCsv) {
  open(demo("text-rope-series/step-001500"));
  QSignalSpy done(window.session(), &Session::jobFinished), failed(window.session(), &Session::failed);
  panel->run("frequency-usage");
  ASSERT_TRUE(finish(done, failed));
  const auto& v = panel->shown();
  EXPECT_EQ(v.kind, "frequency-usage");
  EXPECT_EQ(v.left.rows, 2) << "heads of layer 0";
  EXPECT_EQ(v.left.cols, 16) << "rotary components";
  EXPECT_EQ(v.right.rows, 2) << "layers";
  EXPECT_EQ(v.left.col_labels[0].substr(0, 3), "c0 ");
  EXPECT_NE(v.provenance.indexOf("SHA-256"), -1);
  EXPECT_TRUE(panel->hasFigure());
  const auto dir = test::scratch_dir();
  QString error;
  ASSERT_TRUE(panel->exportCsv(QString::fromStdString((dir / "gui.csv").string()), &error)) << error.toStdString();
  ASSERT_TRUE(panel->exportFigure(QString::fromStdString((dir / "gui.png").string()), FigureFormat::Png, &error));
  EXPECT_GT(std::filesystem::file_size(dir / "gui.png"), 1000u);
  // The CLI on the same input writes the same CSV bytes, and its HDF5 opens to the same view.
  ASSERT_TRUE(cli("frequency-usage '" + demo("text-rope-series/step-001500") + "' --text '" + kText +
                  "' --out '" + (dir / "cli.csv").string() + "'"));
  // Same columns and rows; numbers equal to float32 rounding (the GUI's worker and the CLI may
  // run on different thread counts, so sums can differ in the last digits).
  std::istringstream gui(read_text(dir / "gui.csv")), cli_csv(read_text(dir / "cli.csv"));
  std::string a, b;
  int rows = 0;
  while (std::getline(gui, a) && std::getline(cli_csv, b)) {
    if (rows++ == 0) {
      EXPECT_EQ(a, b);
      continue;
    }
    std::istringstream x(a), y(b);
    for (std::string p, q; std::getline(x, p, ',') && std::getline(y, q, ',');)
      EXPECT_NEAR(std::stod(p), std::stod(q), 1e-5 * std::max(1.0, std::abs(std::stod(q)))) << a << " vs " << b;
  }
  EXPECT_EQ(rows, 1 + 2 * 2 * 16);
  EXPECT_FALSE(std::getline(cli_csv, b)) << "the CLI's file has more rows";
  ASSERT_TRUE(cli("frequency-usage '" + demo("text-rope-series/step-001500") + "' --text '" + kText +
                  "' --out '" + (dir / "cli.h5").string() + "'"));
  done.clear();
  panel->openFile(QString::fromStdString((dir / "cli.h5").string()));
  ASSERT_TRUE(finish(done, failed));
  EXPECT_EQ(panel->shown().csv, read_text(dir / "cli.csv")) << "the file's numbers, as the CLI wrote them";
  EXPECT_EQ(panel->shown().left.col_labels, v.left.col_labels);
  EXPECT_NE(panel->shown().provenance.indexOf("opened from"), -1);
}

TEST_F(AnalysesWindow, MassiveActivationsTableAndDivergenceMaps) {
  open(demo("text-rope-series/step-001500"));
  QSignalSpy done(window.session(), &Session::jobFinished), failed(window.session(), &Session::failed);
  panel->run("massive-activations");
  ASSERT_TRUE(finish(done, failed));
  EXPECT_EQ(panel->shown().kind, "massive-activations");
  EXPECT_TRUE(panel->hasFigure()) << "top-1/2/3 and median |h| per layer (Sun et al. Fig. 2)";
  EXPECT_EQ(panel->shown().curves.names.size(), 4u);
  EXPECT_EQ(panel->table()->rowCount(), 2);
  EXPECT_EQ(panel->table()->horizontalHeaderItem(1)->text(), "top |h|");
  done.clear();
  panel->run("divergence", QString::fromStdString(demo("text-rope-series/step-000150")));
  ASSERT_TRUE(finish(done, failed));
  const auto& v = panel->shown();
  EXPECT_EQ(v.kind, "divergence");
  EXPECT_EQ(v.left.rows, 2);
  EXPECT_EQ(v.left.cols, 2);
  EXPECT_GT(v.left.values[0], 0.0f);
  EXPECT_NE(v.provenance.indexOf("step-000150"), -1);
}

TEST_F(AnalysesWindow, LengthLossCurvesAndPositionOffsetMaps) {
  open(demo("text-rope-series/step-001500"));
  const auto dir = test::scratch_dir();
  std::string text;
  for (int i = 0; i < 30; ++i) text += "Q: Why is the sky blue? A: Because of the air and the light. ";
  std::ofstream(dir / "text.txt") << text;
  QSignalSpy done(window.session(), &Session::jobFinished), failed(window.session(), &Session::failed);
  panel->run("length-loss", QString::fromStdString((dir / "text.txt").string()));
  ASSERT_TRUE(finish(done, failed));
  const auto& v = panel->shown();
  EXPECT_EQ(v.kind, "length-loss");
  ASSERT_EQ(v.curves.names.size(), 4u) << "none and three RoPE scalings";
  EXPECT_EQ(v.curves.x.size(), 511u) << "T = 4·L = 512";
  EXPECT_EQ(v.curves.markers.size(), 3u) << "L, 2L, 3L";
  EXPECT_TRUE(panel->curvePlot()->isVisibleTo(panel->widget()));
  QString error;
  ASSERT_TRUE(panel->exportFigure(QString::fromStdString((dir / "l.svg").string()), FigureFormat::Svg, &error))
      << error.toStdString();
  done.clear();
  panel->setOffset(40);
  panel->run("position-offset");
  ASSERT_TRUE(finish(done, failed));
  EXPECT_EQ(panel->shown().kind, "position-offset");
  EXPECT_EQ(panel->shown().left.source_rows, panel->shown().right.source_rows);
  EXPECT_NE(panel->shown().summary.indexOf("JS between the patterns"), -1);
  done.clear();
  panel->run("heinsen-states");  // a RoPE model: refused with one message
  QString message;
  ASSERT_FALSE(finish(done, failed, &message));
  EXPECT_NE(message.indexOf("Heinsen position component"), -1) << message.toStdString();
}

TEST_F(AnalysesWindow, ForeignTruncatedAndOtherVersionFilesGetOneMessage) {
  const auto dir = test::scratch_dir();
  QSignalSpy done(window.session(), &Session::jobFinished), failed(window.session(), &Session::failed);
  QString message;
  std::ofstream(dir / "junk.h5") << "not an HDF5 file at all";
  panel->openFile(QString::fromStdString((dir / "junk.h5").string()));
  ASSERT_FALSE(finish(done, failed, &message));
  EXPECT_NE(message.indexOf("junk.h5: not an HDF5 file"), -1) << message.toStdString();

  ASSERT_TRUE(cli("heads '" + demo("flipflop-rope") + "' --tokens 1,2,3,4 --out '" + (dir / "h.h5").string() + "'"));
  {  // the first half of a real file
    const auto bytes = read_text(dir / "h.h5");
    std::ofstream(dir / "half.h5", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  failed.clear();
  panel->openFile(QString::fromStdString((dir / "half.h5").string()));
  ASSERT_FALSE(finish(done, failed, &message));
  EXPECT_NE(message.indexOf("half.h5"), -1) << message.toStdString();

  {  // another version's file
    H5::H5File file((dir / "h.h5").string(), H5F_ACC_RDWR);
    file.removeAttr("poslens_version");
    H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);
    file.createAttribute("poslens_version", type, H5::DataSpace(H5S_SCALAR)).write(type, std::string("0.0.1"));
  }
  failed.clear();
  panel->openFile(QString::fromStdString((dir / "h.h5").string()));
  ASSERT_FALSE(finish(done, failed, &message));
  EXPECT_NE(message.indexOf("written by PosLens 0.0.1"), -1) << message.toStdString();

  // The panel's last good view is still there (nothing shown yet here: none).
  EXPECT_TRUE(panel->shown().csv.empty());
}

// Probe, compare and merged-sweep files open in the Frequencies panel, without a model.
TEST_F(AnalysesWindow, ProbeCompareAndMergedSweepFilesOpenInTheFrequenciesPanel) {
  const auto dir = test::scratch_dir();
  FrequenciesPanel* frequencies = window.panel<FrequenciesPanel>();
  ASSERT_NE(frequencies, nullptr);
  const auto series = demo("text-rope-series");
  ASSERT_TRUE(cli("probe '" + series + "/step-001500' --length 32 --samples 4 --out '" + (dir / "p.h5").string() + "'"));
  ASSERT_TRUE(cli("compare '" + series + "/step-000000' '" + series + "/step-000750' '" + series +
                  "/step-001500' --length 32 --samples 4 --out '" + (dir / "c.h5").string() + "'"));
  QSignalSpy done(window.session(), &Session::jobFinished), failed(window.session(), &Session::failed);
  panel->openFile(QString::fromStdString((dir / "p.h5").string()));
  ASSERT_TRUE(finish(done, failed));
  ASSERT_TRUE(frequencies->probe());
  EXPECT_EQ(frequencies->probe()->n_layers, 2);
  EXPECT_EQ(frequencies->probe()->n_heads, 2);
  EXPECT_FALSE(frequencies->series());
  EXPECT_EQ(frequencies->plot()->curves().T, 32);
  EXPECT_EQ(frequencies->plot()->curves().n_components(), 16);
  done.clear();
  panel->openFile(QString::fromStdString((dir / "c.h5").string()));
  ASSERT_TRUE(finish(done, failed));
  ASSERT_TRUE(frequencies->series());
  ASSERT_EQ(frequencies->series()->per_layer.size(), 2u);
  EXPECT_EQ(frequencies->series()->per_layer[0].steps, (std::vector<int64_t>{0, 750, 1500}));
  EXPECT_TRUE(frequencies->plot()->hasSeries());
  // A merged sweep of the same probes is the same series.
  std::ofstream(dir / "m.json") << R"({"items": [{"checkpoint": ")" << series << R"(/step-000000", "analysis": "probe", )"
                                << R"("options": ["--length", "32", "--samples", "4"]}, {"checkpoint": ")" << series
                                << R"(/step-001500", "analysis": "probe", "options": ["--length", "32", "--samples", "4"]}]})";
  ASSERT_TRUE(cli("sweep '" + (dir / "m.json").string() + "' --out '" + (dir / "sweep").string() + "'"));
  ASSERT_TRUE(cli("merge '" + (dir / "sweep").string() + "' --out '" + (dir / "all.h5").string() + "'"));
  done.clear();
  panel->openFile(QString::fromStdString((dir / "all.h5").string()));
  ASSERT_TRUE(finish(done, failed));
  ASSERT_TRUE(frequencies->series());
  EXPECT_EQ(frequencies->series()->per_layer[0].steps, (std::vector<int64_t>{0, 1500}));
  EXPECT_EQ(frequencies->series()->per_layer[0].vaf.size(), 2u);
  EXPECT_EQ(frequencies->plot()->curves().T, 32) << "the merged file carries the probe's T";
}

// A decomposition (`frequencies`) file opens in the Frequencies panel, a `position-map` file in
// the Position map panel (its first written head), a run's captures in the Analyses panel.
TEST_F(AnalysesWindow, FrequenciesAndPositionMapFilesOpenInTheirPanels) {
  const auto dir = test::scratch_dir();
  ASSERT_TRUE(cli("frequencies '" + demo("text-rope-series/step-001500") + "' --text 'the cat sat' --layer 1 --out '" +
                  (dir / "f.h5").string() + "'"));
  ASSERT_TRUE(cli("position-map '" + demo("flipflop-cope") + "' --text w1i0r1w0 --heads 1.2,0.3 --out '" +
                  (dir / "pm.h5").string() + "'"));
  ASSERT_TRUE(cli("run '" + demo("flipflop-rope") + "' --tokens 1,2,3 --out '" + (dir / "run.h5").string() + "'"));
  QSignalSpy done(window.session(), &Session::jobFinished), failed(window.session(), &Session::failed);
  panel->openFile(QString::fromStdString((dir / "f.h5").string()));
  ASSERT_TRUE(finish(done, failed));
  auto* frequencies = window.panel<FrequenciesPanel>();
  ASSERT_TRUE(frequencies->probe());
  EXPECT_TRUE(frequencies->probe()->from_input);
  EXPECT_EQ(frequencies->probe()->n_layers, 2) << "from the file's model_config";
  EXPECT_NE(frequencies->probe()->find(frequencies->probe()->curves, 1, -1), nullptr) << "layer 1's head mean";
  EXPECT_NE(frequencies->probe()->find(frequencies->probe()->curves, 1, 1), nullptr) << "and each head";
  EXPECT_EQ(frequencies->plot()->curves().layer, 1) << "the file's layer is shown";
  // Its component maps: every query row of the file's terms.
  EXPECT_EQ(frequencies->probe()->maps.layer, 1);
  EXPECT_EQ(frequencies->probe()->maps.heads, (std::vector<int>{-1, 0, 1}));
  frequencies->showMap(true, 2);
  ASSERT_TRUE(frequencies->map()->hasHeatmap());
  EXPECT_EQ(frequencies->map()->heatmap().rows, frequencies->plot()->curves().T);
  EXPECT_THAT(frequencies->map()->heatmap().title, ::testing::HasSubstr("L1 head mean · component c2"));
  frequencies->showMap(false);
  done.clear();
  panel->openFile(QString::fromStdString((dir / "pm.h5").string()));
  ASSERT_TRUE(finish(done, failed));
  auto* positions = window.panel<PositionMapPanel>();
  // The first written head, in layer order: 0.3 (of 1.2 and 0.3).
  EXPECT_EQ(positions->shown().layer, 0);
  EXPECT_EQ(positions->shown().head, 3);
  EXPECT_EQ(positions->shown().pattern.source_rows, 8) << "w1i0r1w0, one token per character";
  EXPECT_EQ(positions->shown().method, "cope");
  EXPECT_TRUE(positions->hasFigure());
  done.clear();
  panel->openFile(QString::fromStdString((dir / "run.h5").string()));
  ASSERT_TRUE(finish(done, failed));
  EXPECT_EQ(panel->shown().kind, "captures");
  EXPECT_EQ(panel->table()->rowCount(), 3) << "two layers' patterns and the logits";
  EXPECT_EQ(panel->shown().left.rows, 3) << "layer 0, head 0's pattern over the 3 tokens";
  EXPECT_EQ(panel->shown().left.kind, HeatmapKind::Probability);
}

TEST_F(AnalysesWindow, HeadsFileOpensAsATable) {
  const auto dir = test::scratch_dir();
  ASSERT_TRUE(cli("heads '" + demo("flipflop-rope") + "' --tokens 1,2,3,4,1,2,3,4 --out '" + (dir / "h.h5").string() + "'"));
  QSignalSpy done(window.session(), &Session::jobFinished), failed(window.session(), &Session::failed);
  panel->openFile(QString::fromStdString((dir / "h.h5").string()));
  ASSERT_TRUE(finish(done, failed));
  EXPECT_EQ(panel->shown().kind, "heads");
  EXPECT_EQ(panel->table()->rowCount(), 8) << "2 layers × 4 heads";
  EXPECT_EQ(panel->table()->columnCount(), 13) << "layer, head and 11 metrics";
}

// Chen et al. 2024 Fig. 1's overlay: u-shape over two demo models of different encodings, opened as curves.
TEST_F(AnalysesWindow, UShapeFileOpensAsCurvesPerModelAndLayer) {
  const auto dir = test::scratch_dir();
  const auto out = (dir / "u.h5").string();
  ASSERT_TRUE(cli("u-shape '" + demo("flipflop-rope") + "' '" + demo("flipflop-absolute") + "' --length 16 --bos 0 --out '" +
                  out + "'"));
  QSignalSpy done(window.session(), &Session::jobFinished), failed(window.session(), &Session::failed);
  panel->openFile(QString::fromStdString(out));
  ASSERT_TRUE(finish(done, failed));
  EXPECT_EQ(panel->shown().kind, "u-shape");
  EXPECT_EQ(panel->shown().curves.y.size(), 4u) << "2 models × 2 layers";
  EXPECT_EQ(panel->shown().curves.x.size(), 16u);
  EXPECT_NE(panel->shown().summary.indexOf("flipflop-absolute (learned absolute"), -1)
      << panel->shown().summary.toStdString();
  EXPECT_EQ(panel->shown().csv.substr(0, 8), "key_pos,");
}

// Heinsen's states: run on the open model, then the CLI's HDF5 of the same input opened without
// a model gives the CLI's CSV bytes; a truncated copy is refused with one message naming it.
TEST_F(AnalysesWindow, HeinsenStatesRunAndTheCliFileOpenToTheSameTable) {
  open(demo("text-heinsen"));
  QSignalSpy done(window.session(), &Session::jobFinished), failed(window.session(), &Session::failed);
  panel->run("heinsen-states");
  ASSERT_TRUE(finish(done, failed));
  const auto ran = panel->shown();
  EXPECT_EQ(ran.kind, "heinsen-states");
  EXPECT_GT(ran.left.rows, 0) << "features × positions";
  EXPECT_EQ(ran.csv.substr(0, 40), "position,token,feature,state,decay,logit");
  const auto dir = test::scratch_dir();
  const std::string args = "heinsen-states '" + demo("text-heinsen") + "' --text '" + kText + "' --out '";
  ASSERT_TRUE(cli(args + (dir / "h.h5").string() + "'"));
  ASSERT_TRUE(cli(args + (dir / "h.csv").string() + "'"));
  done.clear();
  panel->openFile(QString::fromStdString((dir / "h.h5").string()));
  ASSERT_TRUE(finish(done, failed));
  EXPECT_EQ(panel->shown().kind, "heinsen-states");
  EXPECT_EQ(panel->shown().csv, read_text(dir / "h.csv")) << "the file's numbers, as the CLI wrote them";
  EXPECT_EQ(panel->shown().left.rows, ran.left.rows);
  EXPECT_EQ(panel->shown().left.cols, ran.left.cols);
  // Half of the file: one message naming it, the view unchanged.
  std::filesystem::copy_file(dir / "h.h5", dir / "cut.h5");
  std::filesystem::resize_file(dir / "cut.h5", std::filesystem::file_size(dir / "h.h5") / 2);
  done.clear();
  QString message;
  panel->openFile(QString::fromStdString((dir / "cut.h5").string()));
  ASSERT_FALSE(finish(done, failed, &message));
  EXPECT_NE(message.indexOf("cut.h5"), -1) << message.toStdString();
  EXPECT_EQ(panel->shown().csv, read_text(dir / "h.csv"));
}

// The registry is the panel's list: the chooser offers exactly its `panel_run` analyses, in its
// order; every analysis shown here has a file reader; a file of another analysis than the chosen
// one selects its own in the chooser; a name the panel does not run changes nothing.
TEST_F(AnalysesWindow, TheChooserAndTheFileReadersAreTheRegistrys) {
  QStringList expected;
  for (const auto& entry : analysis_entries()) {
    if (entry.panel_run) expected << QString::fromUtf8(entry.name);
    if (entry.shown_in == ShownIn::Analyses) {
      EXPECT_TRUE(analyses_panel_reads(entry.name)) << entry.name;
    }
  }
  EXPECT_EQ(panel->choices(), expected);
  EXPECT_EQ(expected.size(), 9);

  open(demo("flipflop-rope"));
  QSignalSpy done(window.session(), &Session::jobFinished), failed(window.session(), &Session::failed);
  panel->run("frequency-usage");
  ASSERT_TRUE(finish(done, failed));
  const auto dir = test::scratch_dir();
  ASSERT_TRUE(cli("massive-activations '" + demo("flipflop-rope") + "' --tokens 1,2,3,4 --out '" +
                  (dir / "m.h5").string() + "'"));
  done.clear();
  panel->openFile(QString::fromStdString((dir / "m.h5").string()));
  ASSERT_TRUE(finish(done, failed));
  EXPECT_EQ(panel->shown().kind, "massive-activations");
  EXPECT_EQ(panel->widget()->findChild<QComboBox*>("analysisSelector")->currentData().toString(), "massive-activations")
      << "the chooser names what is shown";
}

// A plain analysis (value-norms) through the generic job and view: run on the open model, then
// the CLI's file of the same input opened without a model gives the CLI's CSV bytes and the
// run's maps.
TEST_F(AnalysesWindow, ValueNormsRunAndTheCliFileOpenToTheSameView) {
  open(demo("text-rope-series/step-001500"));
  QSignalSpy done(window.session(), &Session::jobFinished), failed(window.session(), &Session::failed);
  panel->run("value-norms");
  ASSERT_TRUE(finish(done, failed));
  const auto ran = panel->shown();
  EXPECT_EQ(ran.kind, "value-norms");
  EXPECT_TRUE(ran.has_maps());
  EXPECT_GT(ran.right.cols, 1) << "layer × position";
  EXPECT_NE(ran.summary.indexOf("kv heads over"), -1) << ran.summary.toStdString();
  const auto dir = test::scratch_dir();
  const std::string args = "value-norms '" + demo("text-rope-series/step-001500") + "' --text '" + kText + "' --out '";
  ASSERT_TRUE(cli(args + (dir / "v.h5").string() + "'"));
  ASSERT_TRUE(cli(args + (dir / "v.csv").string() + "'"));
  EXPECT_EQ(ran.csv.substr(0, ran.csv.find('\n')), "layer,kv_head,position,token,norm");
  done.clear();
  panel->openFile(QString::fromStdString((dir / "v.h5").string()));
  ASSERT_TRUE(finish(done, failed));
  EXPECT_EQ(panel->shown().kind, "value-norms");
  EXPECT_EQ(panel->shown().csv, read_text(dir / "v.csv")) << "the file's numbers, as the CLI wrote them";
  // The GUI's own run and the CLI's are two processes on other thread counts: equal to the
  // last bits or so (layer 0 exactly), not byte for byte.
  ASSERT_EQ(panel->shown().left.values.size(), ran.left.values.size());
  for (size_t i = 0; i < ran.left.values.size(); ++i)
    EXPECT_NEAR(panel->shown().left.values[i], ran.left.values[i], 1e-5) << i;
  EXPECT_NE(panel->shown().provenance.indexOf("opened from"), -1);
}

// The needle sweep as the panel runs it: the input is the haystack, the pass key hidden at 11
// depths; its loss curve beside the mass maps; the CLI's file opens to the same curve.
TEST_F(AnalysesWindow, NeedleSweepRunsOnTheInputAndItsCliFileOpens) {
  open(demo("english-rope"));
  QSignalSpy done(window.session(), &Session::jobFinished), failed(window.session(), &Session::failed);
  panel->run("needle-sweep");
  ASSERT_TRUE(finish(done, failed));
  const auto ran = panel->shown();
  EXPECT_EQ(ran.kind, "needle-sweep");
  EXPECT_TRUE(ran.has_maps());
  EXPECT_TRUE(ran.has_curves());
  EXPECT_EQ(ran.left.rows, 11) << "depth × layer";
  EXPECT_EQ(ran.right.cols, 4) << "layer × segment";
  EXPECT_NE(ran.summary.indexOf("11 depths at T = "), -1) << ran.summary.toStdString();
  const auto dir = test::scratch_dir();
  ASSERT_TRUE(cli("needle-sweep '" + demo("english-rope") + "' --text '" + kText + "' --depth-count 5 --out '" +
                  (dir / "n.h5").string() + "'"));
  done.clear();
  panel->openFile(QString::fromStdString((dir / "n.h5").string()));
  ASSERT_TRUE(finish(done, failed));
  EXPECT_EQ(panel->shown().kind, "needle-sweep");
  ASSERT_EQ(panel->shown().curves.y.size(), 1u);
  EXPECT_EQ(panel->shown().curves.x.size(), 5u);
}

// A file that crashes libhdf5 itself (tests/data/fuzz/analysis_hdf5) is read in a child
// process first: one message, and the GUI lives on to open a good file after it.
TEST_F(AnalysesWindow, AFileThatCrashesTheHdf5LibraryGetsOneMessage) {
  QSignalSpy done(window.session(), &Session::jobFinished), failed(window.session(), &Session::failed);
  const auto hostile = std::string(POSLENS_SOURCE_DIR) + "/tests/data/fuzz/analysis_hdf5/crash-global-heap-1.h5";
  panel->openFile(QString::fromStdString(hostile));
  QString message;
  ASSERT_FALSE(finish(done, failed, &message));
  // Usually "… crashed the HDF5 library …"; the out-of-bounds read may instead meet mapped memory
  // in the child (tests/data/fuzz/analysis_hdf5/README.md), and then the garbage strings it
  // hands back fail the version check. Either way: one message naming the file, and the GUI lives.
  EXPECT_NE(message.indexOf(QString::fromStdString(hostile)), -1) << message.toStdString();
  const auto dir = test::scratch_dir();
  ASSERT_TRUE(cli("heads '" + demo("flipflop-rope") + "' --tokens 1,2,3,4 --out '" + (dir / "h.h5").string() + "'"));
  failed.clear();
  panel->openFile(QString::fromStdString((dir / "h.h5").string()));
  ASSERT_TRUE(finish(done, failed));
  EXPECT_EQ(panel->shown().kind, "heads");
}

}  // namespace
}  // namespace poslens::gui
