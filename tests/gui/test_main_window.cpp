// The GUI as a user drives it: open stories260K, run, select a head, export; errors become one
// dialog; cancel stops a run. Offscreen Qt, the real worker thread and model.
#include <QApplication>
#include <QComboBox>
#include <QElapsedTimer>
#include <QMessageBox>
#include <QSignalSpy>
#include <QTest>

#include <gtest/gtest.h>

#include <H5Cpp.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "app/gui/main_window.h"
#include "fixtures.h"
#include "widgets/head_grid.h"
#include "widgets/heatmap_view.h"

namespace poslens::gui {
namespace {

QString stories() {
  return QString::fromStdString((test::stories_dir() / "stories260K.bin").string());
}

/// Waits until `spy` has recorded `count` signals, then lets the window handle them.
/// (QSignalSpy::wait alone misses a signal the worker thread emitted before wait() started;
/// the window's queued slot runs only once this thread processes its events.)
bool arrived(QSignalSpy& spy, int timeout_ms, int count = 1) {
  QElapsedTimer clock;
  clock.start();
  while (spy.count() < count && clock.elapsed() < timeout_ms) QTest::qWait(10);
  QCoreApplication::processEvents();
  return spy.count() >= count;
}

/// The dialog the window shows for an error, or null.
QMessageBox* error_dialog(MainWindow& w) { return w.findChild<QMessageBox*>(); }

TEST(MainWindow, OpenRunSelectHeadAndExport) {
  POSLENS_REQUIRE_STORIES();
  MainWindow window;
  window.show();
  QSignalSpy opened(window.worker(), &InferenceWorker::opened);
  window.openCheckpoint(stories());
  ASSERT_TRUE(arrived(opened, 30000));

  QSignalSpy finished(window.worker(), &InferenceWorker::runFinished);
  QSignalSpy progress(window.worker(), &InferenceWorker::progress);
  QSignalSpy head(window.worker(), &InferenceWorker::headReady);
  window.setInputText("Once upon a time");
  window.run();
  ASSERT_TRUE(arrived(finished, 30000));
  EXPECT_EQ(progress.count(), 5) << "one progress report per layer";
  EXPECT_EQ(window.headGrid()->layerCount(), 5);
  EXPECT_EQ(window.headGrid()->headCount(), 8);

  ASSERT_TRUE(arrived(head, 10000)) << "a finished run shows the selected head (0, 0)";
  window.headGrid()->selectHead(3, 6);
  ASSERT_TRUE(arrived(head, 10000, 2));
  const auto map = head.at(1).at(0).value<HeatmapData>();
  EXPECT_EQ(map.layer, 3);
  EXPECT_EQ(map.head, 6);
  EXPECT_EQ(map.rows, 5);  // BOS + 4 tokens
  EXPECT_EQ(map.row_labels.size(), 5u);
  QTest::qWait(50);
  EXPECT_TRUE(window.heatmapView()->hasHeatmap());
  EXPECT_EQ(window.heatmapView()->keyTickLabels().size(), 5);

  const auto out = test::scratch_dir() / "gui.h5";
  QSignalSpy exported(window.worker(), &InferenceWorker::exported);
  emit window.requestExport(QString::fromStdString(out.string()));
  ASSERT_TRUE(arrived(exported, 10000));
  H5::H5File file(out.string(), H5F_ACC_RDONLY);
  EXPECT_TRUE(file.nameExists("/captures/blocks.3.attn.hook_pattern"));
  EXPECT_TRUE(file.nameExists("/captures/blocks.0.attn.hook_rot_q")) << "default capture is *";
  EXPECT_EQ(error_dialog(window), nullptr);
}

TEST(MainWindow, BrokenCheckpointShowsOneDialogAndKeepsTheWindow) {
  const auto broken = test::scratch_dir() / "broken.bin";
  { std::ofstream(broken) << "not a model"; }
  MainWindow window;
  window.show();
  QSignalSpy failed(window.worker(), &InferenceWorker::failed);
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
  QSignalSpy opened(window.worker(), &InferenceWorker::opened);
  window.openCheckpoint(stories());
  ASSERT_TRUE(arrived(opened, 30000));
  window.setInputText("   ");
  window.run();
  auto* dialog = error_dialog(window);
  ASSERT_NE(dialog, nullptr);
  EXPECT_TRUE(dialog->text().contains("empty"));
}

/// A PosLens CoPE+RoPE model written by the PyTorch reference (tools/poslens_reference.py), or
/// an empty string when Debian's python3-torch is absent.
QString cope_model() {
  const auto dir = test::scratch_dir();
  const std::string command = std::string("/usr/bin/python3 ") + POSLENS_SOURCE_DIR +
                              "/tools/poslens_reference.py make-test-models " + dir.string() +
                              " --case cope_rope > /dev/null 2>&1";
  if (std::system(command.c_str()) != 0) return {};
  return QString::fromStdString((dir / "cope_rope").string());
}

TEST(MainWindow, ShowsCopeGatesOfAPosLensModel) {
  const QString model = cope_model();
  if (model.isEmpty()) GTEST_SKIP() << "/usr/bin/python3 with torch is needed to write the model";
  MainWindow window;
  window.show();
  QSignalSpy opened(window.worker(), &InferenceWorker::opened);
  window.openCheckpoint(model);
  ASSERT_TRUE(arrived(opened, 30000));
  const auto views = opened.at(0).at(0).value<ModelSummary>().views;
  EXPECT_EQ(views, (QStringList{"hook_pattern", "hook_attn_scores", "hook_pos_scores",
                                "hook_cope_gates", "hook_cope_pos"}));
  EXPECT_EQ(window.viewSelector()->count(), 5);

  QSignalSpy finished(window.worker(), &InferenceWorker::runFinished);
  QSignalSpy head(window.worker(), &InferenceWorker::headReady);
  window.setInputText("1, 5, 9, 3, 3, 7");
  window.run();
  ASSERT_TRUE(arrived(finished, 30000));
  ASSERT_TRUE(arrived(head, 10000));
  EXPECT_NE(head.at(0).at(0).value<HeatmapData>().title.find("attention pattern"), std::string::npos);

  window.viewSelector()->setCurrentIndex(views.indexOf("hook_cope_gates"));  // re-runs
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

TEST(InferenceWorker, CancelStopsARunAtTheNextLayer) {
  POSLENS_REQUIRE_STORIES();
  InferenceWorker worker;  // driven directly on this thread
  QSignalSpy cancelled(&worker, &InferenceWorker::cancelled);
  QSignalSpy finished(&worker, &InferenceWorker::runFinished);
  worker.openCheckpoint(stories(), "cpu", "float32");
  QObject::connect(&worker, &InferenceWorker::progress, &worker,
                   [&](int done, int) { if (done == 2) worker.requestCancel(); },
                   Qt::DirectConnection);
  worker.run(1, "Once upon a time", false, "", "hook_pattern");
  EXPECT_EQ(cancelled.count(), 1);
  EXPECT_EQ(finished.count(), 0);
}

TEST(InferenceWorker, SupersededRunIsSkipped) {
  POSLENS_REQUIRE_STORIES();
  InferenceWorker worker;
  QSignalSpy finished(&worker, &InferenceWorker::runFinished);
  worker.openCheckpoint(stories(), "cpu", "float32");
  worker.setLatestGeneration(2);
  worker.run(1, "stale request", false, "", "hook_pattern");
  EXPECT_EQ(finished.count(), 0);
  worker.run(2, "Lily", false, "", "hook_pattern");
  EXPECT_EQ(finished.count(), 1);
}

}  // namespace
}  // namespace poslens::gui

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") && qEnvironmentVariableIsEmpty("DISPLAY"))
    qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
