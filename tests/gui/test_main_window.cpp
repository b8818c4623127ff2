// The GUI as a user drives it: open stories260K, run, select a head, export; errors become one
// dialog; the panels follow the Session. Offscreen Qt, the real worker thread and model.
// LibTorch before Qt: Qt's `slots` macro breaks torch headers.
#include "core/models/poslens_model.h"

#include <QApplication>
#include <QCheckBox>
#include <QLabel>
#include <QLineEdit>
#include <QComboBox>
#include <QDir>
#include <QMenu>
#include <QDockWidget>
#include <QKeyEvent>
#include <QMessageBox>
#include <QPushButton>
#include <QSignalSpy>
#include <QTest>

#include <gtest/gtest.h>

#include <H5Cpp.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "app/gui/demo_models.h"
#include "app/gui/inference_worker.h"
#include "app/gui/main_window.h"
#include "app/gui/panels/interventions_panel.h"
#include "app/gui/panels/panel.h"
#include "gui_test_util.h"
#include "widgets/head_grid.h"
#include "widgets/figure_export.h"
#include "widgets/heatmap_view.h"

namespace poslens::gui {
namespace {

using test::arrived;
using test::stories;

HeadGrid* headGrid(MainWindow& w) { return w.findChild<HeadGrid*>(); }
HeatmapView* heatmapView(MainWindow& w) { return w.findChild<HeatmapView*>(); }
QComboBox* viewSelector(MainWindow& w) { return w.findChild<QComboBox*>("viewSelector"); }

/// The dialog the window shows for an error, or null.
QMessageBox* error_dialog(MainWindow& w) { return w.findChild<QMessageBox*>(); }

TEST(MainWindow, OpenRunSelectHeadAndExport) {
  POSLENS_REQUIRE_STORIES();
  MainWindow window;
  window.show();
  QSignalSpy opened(window.session(), &Session::modelOpened);
  window.openCheckpoint(stories());
  ASSERT_TRUE(arrived(opened, 30000));

  QSignalSpy finished(window.session(), &Session::runFinished);
  QSignalSpy progress(window.session(), &Session::progress);
  QSignalSpy head(window.session(), &Session::headReady);
  window.setInputText("Once upon a time");
  window.session()->run();
  ASSERT_TRUE(arrived(finished, 30000));
  EXPECT_EQ(progress.count(), 5) << "one progress report per layer";
  EXPECT_EQ(headGrid(window)->layerCount(), 5);
  EXPECT_EQ(headGrid(window)->headCount(), 8);

  ASSERT_TRUE(arrived(head, 10000)) << "a finished run shows the selected head (0, 0)";
  headGrid(window)->selectHead(3, 6);
  ASSERT_TRUE(arrived(head, 10000, 2));
  const auto map = head.at(1).at(0).value<HeatmapData>();
  EXPECT_EQ(map.layer, 3);
  EXPECT_EQ(map.head, 6);
  EXPECT_EQ(map.rows, 5);  // BOS + 4 tokens
  EXPECT_EQ(map.row_labels.size(), 5u);
  QTest::qWait(50);
  EXPECT_TRUE(heatmapView(window)->hasHeatmap());
  EXPECT_EQ(heatmapView(window)->keyTickLabels().size(), 5);

  const auto out = test::scratch_dir() / "gui.h5";
  QSignalSpy exported(window.session(), &Session::exported);
  window.session()->exportCaptures(QString::fromStdString(out.string()));
  ASSERT_TRUE(arrived(exported, 10000));
  H5::H5File file(out.string(), H5F_ACC_RDONLY);
  EXPECT_TRUE(file.nameExists("/captures/blocks.3.attn.hook_pattern"));
  EXPECT_TRUE(file.nameExists("/captures/logits"));
  EXPECT_FALSE(file.nameExists("/captures/blocks.0.attn.hook_rot_q"))
      << "the default export is patterns + logits; everything is an explicit choice";
  EXPECT_EQ(error_dialog(window), nullptr);
}

TEST(InterventionsPanel, FieldsBecomeTheCliSpecs) {
  EXPECT_EQ(intervention_specs(0.0, "", false, false, false), QStringList());
  EXPECT_EQ(intervention_specs(0.25, " L3H1:2,L5:0.5  L0H2:4 ", true, true, true),
            (QStringList{"p-rope=0.25", "temperature=L3H1:2", "temperature=L5:0.5", "temperature=L0H2:4",
                         "mask-first-key", "massive=zero", "no-sinks"}));
  EXPECT_EQ(intervention_specs(0.0, "", false, false, false, " /data/means.h5 "), QStringList{"massive=mean:/data/means.h5"});
}

TEST(MainWindow, InterventionsPanelAppliesShowsAndRefusesWithADialog) {
  POSLENS_REQUIRE_STORIES();
  MainWindow window;
  window.show();
  QSignalSpy opened(window.session(), &Session::modelOpened);
  window.openCheckpoint(stories());
  ASSERT_TRUE(arrived(opened, 30000));
  auto* mask = window.findChild<QCheckBox*>("interventionsMaskFirstKey");
  auto* temperatures = window.findChild<QLineEdit*>("interventionsTemperatures");
  auto* apply = window.findChild<QPushButton*>("interventionsApply");
  auto* status = window.findChild<QLabel*>("interventionsStatus");
  ASSERT_TRUE(mask && temperatures && apply && status);
  EXPECT_TRUE(status->text().contains("as stored"));
  mask->setChecked(true);
  apply->click();
  ASSERT_TRUE(arrived(opened, 10000, 2));
  EXPECT_EQ(window.session()->model().interventions, "first token masked as a key");
  EXPECT_TRUE(status->text().contains("first token masked as a key")) << status->text().toStdString();
  EXPECT_TRUE(window.windowTitle().contains("with first token masked as a key"));
  // A head that does not exist: one dialog naming it; the model runs as before.
  QSignalSpy failed(window.session(), &Session::failed);
  temperatures->setText("L7H0:2");
  apply->click();
  ASSERT_TRUE(arrived(failed, 10000));
  QTest::qWait(50);
  auto* dialog = error_dialog(window);
  ASSERT_NE(dialog, nullptr);
  EXPECT_TRUE(dialog->text().contains("temperature on layer 7: the model has 5 layers")) << dialog->text().toStdString();
  EXPECT_EQ(window.session()->model().interventions, "first token masked as a key");
}

TEST(MainWindow, CommandLineInterventionsApplyBeforeTheRunAndShowInThePanel) {
  POSLENS_REQUIRE_STORIES();
  MainWindow window;
  QSignalSpy finished(window.session(), &Session::runFinished);
  window.setInputText("Once upon a time");
  window.interveneWhenLoaded({"temperature=L1H2:2", "mask-first-key"});
  window.runWhenLoaded();
  window.openCheckpoint(stories());
  ASSERT_TRUE(arrived(finished, 30000));
  EXPECT_TRUE(finished.at(0).at(0).value<RunSummary>().message.contains(
      "with interventions: L1H2 τ 2, first token masked as a key"));
  EXPECT_TRUE(window.findChild<QCheckBox*>("interventionsMaskFirstKey")->isChecked());
  EXPECT_EQ(window.findChild<QLineEdit*>("interventionsTemperatures")->text(), "L1H2:2");
  EXPECT_EQ(finished.count(), 1) << "one run, of the intervened model";
}

TEST(MainWindow, BrokenCheckpointShowsOneDialogAndKeepsTheWindow) {
  const auto broken = test::scratch_dir() / "broken.bin";
  { std::ofstream(broken) << "not a model"; }
  MainWindow window;
  window.show();
  QSignalSpy failed(window.session(), &Session::failed);
  window.openCheckpoint(QString::fromStdString(broken.string()));
  ASSERT_TRUE(arrived(failed, 10000));
  QTest::qWait(50);
  auto* dialog = error_dialog(window);
  ASSERT_NE(dialog, nullptr);
  EXPECT_TRUE(dialog->text().contains("broken.bin")) << dialog->text().toStdString();
  EXPECT_TRUE(window.isVisible());
}

TEST(MainWindow, EmptyInputIsRefusedWithADialog) {
  POSLENS_REQUIRE_STORIES();
  MainWindow window;
  QSignalSpy opened(window.session(), &Session::modelOpened);
  window.openCheckpoint(stories());
  ASSERT_TRUE(arrived(opened, 30000));
  window.setInputText("   ");
  window.session()->run();
  auto* dialog = error_dialog(window);
  ASSERT_NE(dialog, nullptr);
  EXPECT_TRUE(dialog->text().contains("empty"));
}

TEST(MainWindow, InputTextOpensFromAFileAndABadFileChangesNothing) {
  MainWindow window;
  const auto dir = test::scratch_dir() / "input_text";
  std::filesystem::create_directories(dir);
  const auto good = dir / "story.txt", bad = dir / "latin1.txt";
  std::ofstream(good) << "Once upon a time\nthere was a garçon.\n";
  std::ofstream(bad) << "gar\xe7on";  // Latin-1, not UTF-8
  window.session()->openInputText(QString::fromStdString(good.string()));
  EXPECT_EQ(window.session()->input().text, QString::fromUtf8("Once upon a time\nthere was a garçon.\n"));
  EXPECT_EQ(error_dialog(window), nullptr);
  window.session()->openInputText(QString::fromStdString(bad.string()));
  auto* dialog = error_dialog(window);
  ASSERT_NE(dialog, nullptr);
  EXPECT_TRUE(dialog->text().contains("not UTF-8")) << dialog->text().toStdString();
  EXPECT_TRUE(dialog->text().contains("latin1.txt"));
  EXPECT_EQ(window.session()->input().text, QString::fromUtf8("Once upon a time\nthere was a garçon.\n"));
}

/// A PosLens CoPE+RoPE model (tools/poslens_test_models.py's cope_rope shape) with fresh
/// weights, written here: the view needs a model with CoPE, not a trained one.
QString cope_model() {
  const auto config = poslens_config_from_text(
      R"({"model_type": "poslens", "d_model": 32, "n_layers": 2, "n_heads": 4, "d_mlp": 64,
          "vocab_size": 64, "n_ctx": 64,
          "position_encoding": [{"type": "rope"}, {"type": "cope", "npos_max": 8}]})",
      "cope_rope test model");
  const auto dir = test::scratch_dir() / "cope_rope";
  write_poslens_model(dir.string(), config, initialize_weights(config, 5));
  return QString::fromStdString(dir.string());
}

TEST(MainWindow, ShowsCopeGatesOfAPosLensModel) {
  const QString model = cope_model();
  MainWindow window;
  window.show();
  QSignalSpy opened(window.session(), &Session::modelOpened);
  window.openCheckpoint(model);
  ASSERT_TRUE(arrived(opened, 30000));
  const auto views = opened.at(0).at(0).value<ModelSummary>().views;
  EXPECT_EQ(views, (QStringList{"hook_pattern", "hook_attn_scores", "hook_pos_scores",
                                "hook_cope_gates", "hook_cope_pos"}));
  EXPECT_EQ(viewSelector(window)->count(), 5);

  QSignalSpy finished(window.session(), &Session::runFinished);
  QSignalSpy head(window.session(), &Session::headReady);
  window.setInputText("1, 5, 9, 3, 3, 7");
  window.session()->run();
  ASSERT_TRUE(arrived(finished, 30000));
  ASSERT_TRUE(arrived(head, 10000));
  EXPECT_NE(head.at(0).at(0).value<HeatmapData>().title.find("attention pattern"), std::string::npos);

  viewSelector(window)->setCurrentIndex(views.indexOf("hook_cope_gates"));  // re-runs
  ASSERT_TRUE(arrived(finished, 30000, 2));
  ASSERT_TRUE(arrived(head, 10000, 2));
  const auto map = head.at(1).at(0).value<HeatmapData>();
  EXPECT_NE(map.title.find("CoPE gates"), std::string::npos) << map.title;
  EXPECT_EQ(map.value_name, "gate");
  ASSERT_EQ(map.rows, 6);
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 6; ++j) {
      if (j > i) {
        EXPECT_TRUE(std::isnan(map.at(i, j))) << "future keys are masked";
      } else {
        EXPECT_GT(map.at(i, j), 0.0f);
        EXPECT_LT(map.at(i, j), 1.0f);
      }
    }
  EXPECT_EQ(error_dialog(window), nullptr);
}

TEST(DemoModels, FoundInTheirFolderWithSeriesExpanded) {
  QDir dir(QString::fromStdString(
      (std::filesystem::temp_directory_path() / "poslens-tests" / "DemoModels").string()));
  dir.removeRecursively();
  for (const char* folder : {"flipflop-cope", "text-rope-series/step-000010",
                             "text-rope-series/step-000000", "configs"}) {
    QDir().mkpath(dir.filePath(folder));
    if (QString(folder) != "configs")
      std::ofstream(dir.filePath(folder).toStdString() + "/config.json") << "{}";
  }
  // The sample input follows the task in the training record, whatever the folder's name.
  QDir().mkpath(dir.filePath("a-counting-model"));
  std::ofstream(dir.filePath("a-counting-model").toStdString() + "/config.json")
      << R"({"training": {"task": "counting"}})";
  const auto demos = findDemoModels(dir.path());
  ASSERT_EQ(demos.size(), 4u) << "configs/ holds no model";
  EXPECT_EQ(demos[0].name, "a-counting-model");
  EXPECT_TRUE(demos[0].text.startsWith("<pad> <pad> <pad> a = 0 ;")) << demos[0].text.toStdString();
  EXPECT_TRUE(demos[0].text.endsWith("print a"));
  EXPECT_EQ(demos[1].name, "flipflop-cope");
  EXPECT_EQ(demos[1].view, "hook_cope_gates");
  EXPECT_TRUE(demos[1].text.startsWith("w1i0"));
  EXPECT_EQ(demos[2].name, "text-rope-series/step-000000");
  EXPECT_EQ(demos[3].name, "text-rope-series/step-000010");
  EXPECT_EQ(demos[3].view, "hook_pattern");
  EXPECT_TRUE(demos[3].text.startsWith("Q: How many"));
  EXPECT_TRUE(findDemoModels(dir.filePath("missing")).empty());
}

TEST(DemoModels, TheShippedFlipFlopCopeDemoOpensOnItsGates) {
  const QString demo = QString(POSLENS_SOURCE_DIR) + "/resources/demos/flipflop-cope";
  if (!QDir(demo).exists("config.json")) POSLENS_MISSING_PREREQUISITE("no demo at " << demo.toStdString());
  MainWindow window;
  window.show();
  auto* menu = window.findChild<QMenu*>("demoMenu");
  ASSERT_NE(menu, nullptr);
  QStringList labels;
  for (auto* action : menu->actions()) labels << action->text();
  EXPECT_TRUE(labels.contains("flipflop-cope")) << labels.join(", ").toStdString();

  QSignalSpy finished(window.session(), &Session::runFinished);
  QSignalSpy head(window.session(), &Session::headReady);
  for (const auto& d : findDemoModels(QString(POSLENS_SOURCE_DIR) + "/resources/demos"))
    if (d.name == "flipflop-cope") window.openDemo(d);
  ASSERT_TRUE(arrived(finished, 30000)) << "the demo runs as soon as it is loaded";
  ASSERT_TRUE(arrived(head, 10000));
  const auto map = head.at(head.count() - 1).at(0).value<HeatmapData>();
  EXPECT_NE(map.title.find("CoPE gates"), std::string::npos) << map.title;
  EXPECT_EQ(map.rows, 46) << "the Flip-Flop sample, one token per character";
  EXPECT_EQ(error_dialog(window), nullptr);
}

TEST(MainWindow, IsAssembledFromPanels) {
  MainWindow window;
  ASSERT_EQ(window.panels().size(), 8u);
  QStringList docks;
  for (auto* dock : window.findChildren<QDockWidget*>()) docks << dock->objectName();
  docks.sort();
  EXPECT_EQ(docks,
            (QStringList{"analyses", "frequencies", "heads", "input", "interventions", "model", "position_map"}));
  EXPECT_EQ(window.centralWidget(), heatmapView(window));
  EXPECT_NE(headGrid(window), nullptr);
}

/// The Input panel's button labelled `text`.
QPushButton* button(MainWindow& w, const QString& text) {
  for (auto* b : w.findChildren<QPushButton*>())
    if (b->text() == text) return b;
  return nullptr;
}

TEST(MainWindow, CancelWhileLoadingDiscardsTheModel) {
  POSLENS_REQUIRE_STORIES();
  MainWindow window;
  window.show();
  QSignalSpy worker_cancelled(window.session()->worker(), &InferenceWorker::cancelled);
  QSignalSpy opened(window.session(), &Session::modelOpened);
  test::WorkerGate gate(window.session()->worker());
  window.openCheckpoint(stories());
  auto* cancel = button(window, "Cancel");
  ASSERT_NE(cancel, nullptr);
  EXPECT_TRUE(cancel->isEnabled()) << "loading is busy and can be cancelled";
  QTest::mouseClick(cancel, Qt::LeftButton);
  EXPECT_FALSE(cancel->isEnabled());
  gate.open();
  ASSERT_TRUE(arrived(worker_cancelled, 30000));
  test::settle(*window.session());
  EXPECT_EQ(opened.count(), 0);
  EXPECT_FALSE(window.session()->hasModel());
  EXPECT_FALSE(button(window, "Run")->isEnabled());
  EXPECT_EQ(window.windowTitle(), "PosLens");
}

TEST(MainWindow, CentralPanelExportsItsFigureAsSvg) {
  POSLENS_REQUIRE_STORIES();
  MainWindow window;
  window.show();
  QSignalSpy head(window.session(), &Session::headReady);
  window.runWhenLoaded();
  window.openCheckpoint(stories());
  ASSERT_TRUE(arrived(head, 30000));
  Panel* centre = window.panels().front().get();
  ASSERT_EQ(centre->placement(), Panel::Placement::Central);
  EXPECT_TRUE(centre->hasFigure());
  const auto svg = test::scratch_dir() / "head.svg";
  QString error;
  ASSERT_TRUE(centre->exportFigure(QString::fromStdString(svg.string()), FigureFormat::Svg, &error))
      << error.toStdString();
  std::ifstream in(svg);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("<svg"), std::string::npos);
}

TEST(MainWindow, ArrowKeysInTheGridShowTheLastHead) {
  POSLENS_REQUIRE_STORIES();
  MainWindow window;
  window.show();
  QSignalSpy finished(window.session(), &Session::runFinished);
  QSignalSpy head(window.session(), &Session::headReady);
  window.setInputText("Once upon a time");
  window.runWhenLoaded();
  window.openCheckpoint(stories());
  ASSERT_TRUE(arrived(finished, 30000));
  ASSERT_TRUE(arrived(head, 10000));
  head.clear();
  for (int i = 0; i < 5; ++i) QTest::keyClick(headGrid(window), Qt::Key_Right);
  QTest::keyClick(headGrid(window), Qt::Key_Down);
  ASSERT_TRUE(arrived(head, 10000));
  test::settle(*window.session());
  EXPECT_EQ(head.count(), 1) << "heads passed over are not painted";
  EXPECT_EQ(heatmapView(window)->heatmap().layer, 1);
  EXPECT_EQ(heatmapView(window)->heatmap().head, 5);
}

TEST(InferenceWorker, CancelStopsARunAtTheNextLayer) {
  POSLENS_REQUIRE_STORIES();
  InferenceWorker worker;  // driven directly on this thread
  QSignalSpy cancelled(&worker, &InferenceWorker::cancelled);
  QSignalSpy finished(&worker, &InferenceWorker::runFinished);
  QSignalSpy opened(&worker, &InferenceWorker::opened);
  worker.open(JobTicket{1}, stories(), "cpu", "float32");
  ASSERT_EQ(opened.count(), 1);
  JobTicket run{2};
  QObject::connect(&worker, &InferenceWorker::progress, &worker,
                   [&](quint64, int done, int) { if (done == 2) run.cancel->store(true); },
                   Qt::DirectConnection);
  worker.run(run, {"Once upon a time", false}, "hook_pattern");
  ASSERT_EQ(cancelled.count(), 1);
  EXPECT_EQ(cancelled.at(0).at(0).toULongLong(), 2u) << "carries the job's generation";
  EXPECT_EQ(finished.count(), 0);
}

}  // namespace
}  // namespace poslens::gui
