// The Session without any window: the job queue's replacement, cancellation and generation
// rules, with the real worker thread and the stories260K model.
// LibTorch first: Qt's `slots` macro breaks torch headers if Qt comes first.
#include <torch/torch.h>

#include <QSignalSpy>

#include <gtest/gtest.h>

#include <H5Cpp.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <filesystem>

#include "app/gui/inference_worker.h"
#include "core/runtime/checkpoint.h"
#include "core/runtime/transformer.h"
#include "app/gui/session.h"
#include "app/gui/worker_context.h"
#include "gui_test_util.h"

namespace poslens::gui {
namespace {

using test::arrived;
using test::settle;
using test::stories;
using test::WorkerGate;

/// How many jobs of `tag` the session sent to the worker.
int started(const QSignalSpy& spy, const QString& tag) {
  int n = 0;
  for (const auto& args : spy) n += args.at(0).toString() == tag;
  return n;
}

/// A session with stories260K open.
class OpenSession : public ::testing::Test {
 protected:
  void SetUp() override {
    POSLENS_REQUIRE_STORIES();
    QSignalSpy opened(&session, &Session::modelOpened);
    session.setLoadOptions("cpu", "float32");
    session.open(stories());
    ASSERT_TRUE(arrived(opened, 30000));
  }
  Session session;
};

TEST(Session, QueuedRunReplacedByANewerOneRunsOnce) {
  POSLENS_REQUIRE_STORIES();
  Session session;
  QSignalSpy jobs(&session, &Session::jobStarted);
  QSignalSpy finished(&session, &Session::runFinished);
  session.setLoadOptions("cpu", "float32");
  session.open(stories());  // the worker is busy loading while the runs queue up
  for (const char* text : {"Once", "Once upon", "Once upon a time"}) {
    session.setInput({text, false});
    session.run();
  }
  ASSERT_TRUE(arrived(finished, 30000));
  settle(session);
  EXPECT_EQ(started(jobs, "run"), 1) << "each newer run replaced the queued one";
  EXPECT_EQ(finished.count(), 1);
  EXPECT_EQ(finished.at(0).at(0).value<RunSummary>().tokens.size(), 5) << "BOS + 4 tokens";
  EXPECT_EQ(session.lastRun()->tokens.size(), 5);
}

TEST_F(OpenSession, StaleRunningRunIsCancelledAndItsResultNeverEmitted) {
  QSignalSpy finished(&session, &Session::runFinished);
  QSignalSpy user_cancelled(&session, &Session::cancelled);
  QSignalSpy worker_cancelled(session.worker(), &InferenceWorker::cancelled);
  // While the first run is between layers 1 and 2, the user starts a newer run: the worker
  // thread waits until the Session has queued it (and marked the running one stale).
  std::atomic<bool> fired{false};
  QObject::connect(
      session.worker(), &InferenceWorker::progress, session.worker(),
      [&](quint64, int done, int) {
        if (done != 1 || fired.exchange(true)) return;
        QMetaObject::invokeMethod(
            &session,
            [&] {
              session.setInput({"Once upon a time", false});
              session.run();
            },
            Qt::BlockingQueuedConnection);
      },
      Qt::DirectConnection);
  session.setInput({"Once", false});
  session.run();
  ASSERT_TRUE(arrived(finished, 30000));
  settle(session);
  EXPECT_TRUE(fired);
  EXPECT_EQ(worker_cancelled.count(), 1) << "the stale run stopped at the next layer";
  ASSERT_EQ(finished.count(), 1) << "only the newer run's result arrives";
  EXPECT_EQ(finished.at(0).at(0).value<RunSummary>().tokens.size(), 5);
  EXPECT_EQ(user_cancelled.count(), 0) << "a replaced job is not a user cancel";
}

TEST_F(OpenSession, ArrowingOverHeadsDeliversOnlyTheLatestHead) {
  QSignalSpy finished(&session, &Session::runFinished);
  QSignalSpy heads(&session, &Session::headReady);
  QSignalSpy jobs(&session, &Session::jobStarted);
  session.setInput({"Once upon a time", false});
  session.run();
  ASSERT_TRUE(arrived(finished, 30000));
  ASSERT_TRUE(arrived(heads, 10000)) << "a finished run shows the selected head";
  EXPECT_EQ(heads.at(0).at(0).value<HeatmapData>().layer, 0);
  heads.clear();
  jobs.clear();
  for (int layer = 0; layer < 5; ++layer)
    for (int head = 0; head < 8; ++head) session.selectHead(layer, head);  // held arrow key
  ASSERT_TRUE(arrived(heads, 10000));
  settle(session);
  ASSERT_EQ(heads.count(), 1) << "the heads passed over never reach the view";
  const auto map = heads.at(0).at(0).value<HeatmapData>();
  EXPECT_EQ(map.layer, 4);
  EXPECT_EQ(map.head, 7);
  EXPECT_EQ(map.kind, HeatmapKind::Probability);
  EXPECT_LE(started(jobs, "head"), 2) << "queued head requests are replaced, not run";
  EXPECT_EQ(session.selectedHead(), std::make_pair(4, 7));
}

/// Counts `signal` of the worker as it is emitted, on the worker thread.
template <typename Signal>
std::shared_ptr<std::atomic<int>> countOnWorker(Session& session, Signal signal) {
  auto count = std::make_shared<std::atomic<int>>(0);
  QObject::connect(session.worker(), signal, session.worker(), [count] { ++*count; },
                   Qt::DirectConnection);
  return count;
}

/// Blocks this (the GUI) thread without handling events until the worker has emitted
/// `count` reaches `n`: the worker finished a job and queued its result before the GUI learns
/// of it, the case where only the generation stops a stale result.
bool workerSent(const std::atomic<int>& count, int n) {
  for (int i = 0; i < 3000 && count < n; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return count >= n;
}

TEST_F(OpenSession, ResultsQueuedBeforeTheirJobWentStaleAreDropped) {
  QSignalSpy finished(&session, &Session::runFinished);
  QSignalSpy heads(&session, &Session::headReady);
  session.setInput({"Once upon a time", false});
  session.run();
  ASSERT_TRUE(arrived(finished, 30000));
  ASSERT_TRUE(arrived(heads, 10000));
  heads.clear();
  const auto worker_heads = countOnWorker(session, &InferenceWorker::headReady);
  const auto worker_runs = countOnWorker(session, &InferenceWorker::runFinished);

  session.selectHead(1, 1);
  ASSERT_TRUE(workerSent(*worker_heads, 1)) << "the worker computes head (1, 1) and sends it";
  session.selectHead(2, 2);  // before the GUI handled that result
  ASSERT_TRUE(arrived(heads, 10000));
  settle(session);
  ASSERT_EQ(heads.count(), 1);
  EXPECT_EQ(heads.at(0).at(0).value<HeatmapData>().layer, 2);

  session.setInput({"Once", false});
  session.run();
  ASSERT_TRUE(workerSent(*worker_runs, 1)) << "the worker finishes this run and sends it";
  session.setInput({"Once upon a time", false});
  session.run();
  ASSERT_TRUE(arrived(finished, 30000, 2));
  settle(session);
  ASSERT_EQ(finished.count(), 2);
  EXPECT_EQ(finished.at(1).at(0).value<RunSummary>().tokens.size(), 5) << "the newer run only";
}

TEST_F(OpenSession, AFinishedRunsHeadMapGoesAheadOfAQueuedAnalysis) {
  // `poslens CKPT --run --probe`: the run and the probe queue up at once; the run's head map,
  // asked for when the run ends, must not wait minutes behind the probe.
  QSignalSpy jobs(&session, &Session::jobStarted);
  QSignalSpy heads(&session, &Session::headReady);
  QSignalSpy done(&session, &Session::jobFinished);
  session.setInput({"Once upon a time", false});
  session.run();
  session.submit(QStringLiteral("probe"), QStringLiteral("Probing"),
                 [](WorkerContext&) -> std::any { return 1; }, [](const std::any&) {});
  ASSERT_TRUE(arrived(done, 30000));
  settle(session);
  ASSERT_EQ(heads.count(), 1);
  QStringList order;
  for (const auto& args : jobs) order << args.at(0).toString();
  EXPECT_EQ(order.join(',').toStdString(), "run,head,probe");
}

TEST_F(OpenSession, CancelBetweenRunsIsHonoured) {
  QSignalSpy finished(&session, &Session::runFinished);
  QSignalSpy cancelled(&session, &Session::cancelled);
  QSignalSpy exported(&session, &Session::exported);
  session.setInput({"Once upon a time", false});
  session.run();
  ASSERT_TRUE(arrived(finished, 30000));

  // A run sent to the worker but not started, and an export queued behind it: Cancel stops both.
  const auto path = ::poslens::test::scratch_dir() / "cancelled.h5";
  session.run();
  session.exportCaptures(QString::fromStdString(path.string()));
  EXPECT_TRUE(session.isBusy());
  session.cancel();
  EXPECT_FALSE(session.isBusy());
  settle(session);
  EXPECT_EQ(finished.count(), 1) << "the cancelled run never finishes";
  EXPECT_EQ(exported.count(), 0);
  EXPECT_FALSE(std::filesystem::exists(path));
  QStringList tags;
  for (const auto& args : cancelled) tags << args.at(0).toString();
  tags.sort();
  EXPECT_EQ(tags, (QStringList{"export", "run"})) << "each cancelled job says so once";

  session.run();  // a cancel is not sticky
  ASSERT_TRUE(arrived(finished, 30000, 2));
}

TEST_F(OpenSession, CancelledRunClearsTheOldRunInsteadOfFailingOnIt) {
  QSignalSpy finished(&session, &Session::runFinished);
  QSignalSpy cleared(&session, &Session::runCleared);
  QSignalSpy failed(&session, &Session::failed);
  QSignalSpy heads(&session, &Session::headReady);
  session.setInput({"Once upon a time", false});
  session.run();
  ASSERT_TRUE(arrived(finished, 30000));
  ASSERT_TRUE(arrived(heads, 10000));
  session.run();  // sent to the worker, which frees the old captures when it starts
  session.cancel();
  ASSERT_TRUE(arrived(cleared, 10000)) << "views of the freed run are told to clear";
  EXPECT_FALSE(session.lastRun().has_value());
  session.selectHead(2, 3);  // nothing to show: no request, no error
  settle(session);
  EXPECT_EQ(failed.count(), 0);
  EXPECT_EQ(heads.count(), 1);
  EXPECT_EQ(session.selectedHead(), std::make_pair(2, 3));
  session.run();
  ASSERT_TRUE(arrived(heads, 30000, 2)) << "the next run shows the selected head";
  EXPECT_EQ(heads.at(1).at(0).value<HeatmapData>().layer, 2);
}

TEST(Session, OpenThenCancelDiscardsTheModel) {
  POSLENS_REQUIRE_STORIES();
  Session session;
  QSignalSpy opened(&session, &Session::modelOpened);
  QSignalSpy cancelled(&session, &Session::cancelled);
  QSignalSpy failed(&session, &Session::failed);
  QSignalSpy worker_cancelled(session.worker(), &InferenceWorker::cancelled);
  session.setLoadOptions("cpu", "float32");
  WorkerGate gate(session.worker());
  session.open(stories());
  session.cancel();
  gate.open();
  ASSERT_EQ(cancelled.count(), 1);
  EXPECT_EQ(cancelled.at(0).at(0).toString(), "open");
  ASSERT_TRUE(arrived(worker_cancelled, 30000)) << "the worker threw the loaded model away";
  settle(session);
  EXPECT_EQ(opened.count(), 0);
  EXPECT_FALSE(session.hasModel());
  session.setInput({"Once", false});
  session.run();
  ASSERT_EQ(failed.count(), 1);
  EXPECT_TRUE(failed.at(0).at(1).toString().contains("Open a checkpoint first"));
}

TEST_F(OpenSession, CancelledOpenKeepsThePreviousModel) {
  QSignalSpy finished(&session, &Session::runFinished);
  QSignalSpy worker_cancelled(session.worker(), &InferenceWorker::cancelled);
  WorkerGate gate(session.worker());
  session.open(stories());
  session.cancel();
  gate.open();
  ASSERT_TRUE(arrived(worker_cancelled, 30000));
  EXPECT_TRUE(session.hasModel());
  session.setInput({"Once upon a time", false});
  session.run();
  ASSERT_TRUE(arrived(finished, 30000)) << "the worker still has the first model";
}

TEST_F(OpenSession, ExportReRunsTheInputWithTheChosenCaptures) {
  QSignalSpy finished(&session, &Session::runFinished);
  QSignalSpy exported(&session, &Session::exported);
  QSignalSpy progress(&session, &Session::progress);
  session.setInput({"Once upon a time", false});
  session.run();
  ASSERT_TRUE(arrived(finished, 30000));
  session.setInput({"Lily", false});  // edited after the run: the export is of what is shown
  const auto dir = ::poslens::test::scratch_dir();
  const auto small = dir / "patterns.h5";
  EXPECT_EQ(session.exportCaptureSpec(), Session::kDefaultExportCaptures);
  progress.clear();
  session.exportCaptures(QString::fromStdString(small.string()));
  ASSERT_TRUE(arrived(exported, 30000));
  EXPECT_EQ(progress.count(), 5) << "the export re-runs the model, one report per layer";
  {
    H5::H5File file(small.string(), H5F_ACC_RDONLY);
    EXPECT_TRUE(file.nameExists("/captures/blocks.3.attn.hook_pattern"));
    EXPECT_TRUE(file.nameExists("/captures/logits"));
    EXPECT_FALSE(file.nameExists("/captures/blocks.0.attn.hook_rot_q"));
    H5::DataSet logits = file.openDataSet("/captures/logits");
    hsize_t dims[3] = {0, 0, 0};
    logits.getSpace().getSimpleExtentDims(dims);
    EXPECT_EQ(dims[1], 5u) << "the last run's input, not the edited text";
  }
  const auto all = dir / "all.h5";
  session.setExportCaptures("*");
  session.exportCaptures(QString::fromStdString(all.string()));
  ASSERT_TRUE(arrived(exported, 30000, 2));
  H5::H5File file(all.string(), H5F_ACC_RDONLY);
  EXPECT_TRUE(file.nameExists("/captures/blocks.0.attn.hook_rot_q"));
}

/// Head (0, 0)'s thumbnail of the last run: whether each later query still gives key 0 weight.
bool later_rows_see_the_first_key(const RunSummary& run) {
  const auto& map = run.thumbnails.at(0);
  for (int64_t i = 1; i < map.rows; ++i)
    if (!(map.at(i, 0) > 1e-12)) return false;  // 0 or NaN (masked)
  return true;
}

TEST_F(OpenSession, InterventionsReplaceTheModelRerunTheInputAndResetRestoresIt) {
  QSignalSpy opened(&session, &Session::modelOpened);
  QSignalSpy finished(&session, &Session::runFinished);
  QSignalSpy failed(&session, &Session::failed);
  session.setInput({"Once upon a time", false});
  session.run();
  ASSERT_TRUE(arrived(finished, 30000));
  EXPECT_TRUE(later_rows_see_the_first_key(finished.at(0).at(0).value<RunSummary>()));
  session.setInterventions({"mask-first-key"});
  ASSERT_TRUE(arrived(opened, 30000));
  EXPECT_EQ(opened.at(0).at(0).value<ModelSummary>().interventions, "first token masked as a key");
  EXPECT_EQ(session.interventions(), QStringList{"mask-first-key"});
  EXPECT_TRUE(opened.at(0).at(0).value<ModelSummary>().description.contains("interventions:"));
  ASSERT_TRUE(arrived(finished, 30000, 2)) << "the input shown runs again with the intervention";
  const auto after = finished.at(1).at(0).value<RunSummary>();
  EXPECT_FALSE(later_rows_see_the_first_key(after));
  EXPECT_TRUE(after.message.contains("with interventions: first token masked as a key"));
  // One that does not parse fails alone: the intervened model stays.
  session.setInterventions({"p-rope=2"});
  ASSERT_TRUE(arrived(failed, 30000));
  EXPECT_TRUE(failed.at(0).at(1).toString().contains("p must be in [0, 1]"));
  EXPECT_EQ(session.model().interventions, "first token masked as a key");
  session.setInterventions({});
  ASSERT_TRUE(arrived(opened, 30000, 2));
  EXPECT_TRUE(session.model().interventions.isEmpty());
  EXPECT_TRUE(session.interventions().isEmpty());
  ASSERT_TRUE(arrived(finished, 30000, 3));
  EXPECT_TRUE(later_rows_see_the_first_key(finished.at(2).at(0).value<RunSummary>())) << "the checkpoint as stored";
}

TEST(Session, RunWithoutAModelOrInputIsRefused) {
  Session session;
  QSignalSpy failed(&session, &Session::failed);
  QSignalSpy jobs(&session, &Session::jobStarted);
  session.setInput({"Once", false});
  session.run();
  ASSERT_EQ(failed.count(), 1);
  EXPECT_TRUE(failed.at(0).at(1).toString().contains("Open a checkpoint first"));
  session.exportCaptures("/tmp/x.h5");
  EXPECT_EQ(failed.count(), 2);
  EXPECT_EQ(jobs.count(), 0);
}

}  // namespace
}  // namespace poslens::gui

namespace poslens::gui {
namespace {

/// `n` token ids of stories260K's vocabulary, seeded.
RunInput random_ids(int n) {
  QStringList ids;
  for (int i = 0; i < n; ++i) ids << QString::number(3 + (i * 7919) % 509);
  return {ids.join(','), true};
}

TEST_F(OpenSession, ALongHeadMapIsPooledAndARegionComesBackAtFullResolution) {
  QSignalSpy finished(&session, &Session::runFinished);
  QSignalSpy heads(&session, &Session::headReady);
  QSignalSpy regions(&session, &Session::regionReady);
  const auto input = random_ids(1500);  // more positions than the view's 1024 cells
  session.setInput(input);
  session.run();
  ASSERT_TRUE(arrived(finished, 60000));
  ASSERT_TRUE(arrived(heads, 30000));
  session.selectHead(3, 5);
  ASSERT_TRUE(arrived(heads, 30000, 2));
  const auto pooled = heads.at(1).at(0).value<HeatmapData>();
  EXPECT_EQ(pooled.rows, 750) << "1500 positions in cells of 2";
  EXPECT_EQ(pooled.source_rows, 1500);
  session.requestRegion(3, 5, 600, 700, 450, 620);
  ASSERT_TRUE(arrived(regions, 30000));
  const auto region = regions.at(0).at(0).value<HeatmapData>();
  ASSERT_EQ(region.rows, 100);
  ASSERT_EQ(region.cols, 170);
  EXPECT_FALSE(region.pooled());
  EXPECT_EQ(region.row_offset, 600);
  EXPECT_EQ(region.col_offset, 450);
  EXPECT_EQ(heads.count(), 2) << "a region is not a new head map";

  // The same region of the whole pattern, from a forward pass of our own.
  const auto model = load_checkpoint(stories().toStdString(), {"cpu", "float32", ""});
  std::vector<int64_t> ids;
  for (const auto& id : input.text.split(',')) ids.push_back(id.toLongLong());
  Captures whole;
  {
    c10::InferenceMode inference;
    model.model->forward(torch::tensor(ids).unsqueeze(0), CaptureSpec({"blocks.3.attn.hook_pattern"}), &whole);
  }
  const auto expected = whole.find({HookKind::Pattern, 3})[0][5].narrow(0, 600, 100).narrow(1, 450, 170);
  double worst = 0;
  for (int r = 0; r < 100; ++r)
    for (int c = 0; c < 170; ++c) {
      const bool hidden = 450 + c > 600 + r;
      const float v = region.at(r, c);
      if (hidden) {
        EXPECT_TRUE(std::isnan(v)) << r << "," << c;
        continue;
      }
      worst = std::max(worst, std::abs(static_cast<double>(v) - expected[r][c].item<double>()));
    }
  // Rounding only: the region is exp(score − lse) with the lse of rows 600..700 (the fused
  // kernel's where LibTorch has it, else the online pass over key chunks), the capture's block
  // of rows 0..255 or 512..767 (a softmax, or exp(score − its own kernel lse)); float32 logits of
  // magnitude ~10 made by products of other shapes differ by ~1e-6 each, and the exp carries
  // that into the pattern (LibTorch 2.6: 1.07e-5). A wrong cell or offset is off by ~1e-2.
  EXPECT_LT(worst, 5e-5);
}

}  // namespace
}  // namespace poslens::gui

namespace poslens::gui {
namespace {

TEST(Session, EncoderDecoderRowsShowEveryStackAndCrossHeadsReadTheEncoder) {
  // The T5 reference model (tests/data/models/t5): 2 encoder and 2 decoder layers, 4 heads.
  Session session;
  QSignalSpy opened(&session, &Session::modelOpened);
  QSignalSpy finished(&session, &Session::runFinished);
  QSignalSpy heads(&session, &Session::headReady);
  QSignalSpy failed(&session, &Session::failed);
  session.setLoadOptions("cpu", "float32");
  session.open(QString(POSLENS_SOURCE_DIR) + "/tests/data/models/t5");
  ASSERT_TRUE(arrived(opened, 30000));
  const auto model = opened.at(0).at(0).value<ModelSummary>();
  EXPECT_TRUE(model.encoder_decoder);
  EXPECT_EQ(model.layer_labels, (QStringList{"enc 0", "enc 1", "dec 0", "dec 1", "cross 0", "cross 1"}));
  RunInput input{"5,6,7,8,9", true, ""};  // no tokenizer: the decoder is its start token alone
  session.setInput(input);
  session.run();
  ASSERT_TRUE(arrived(finished, 30000));
  const auto run = finished.at(0).at(0).value<RunSummary>();
  ASSERT_EQ(run.n_layers, 6);
  ASSERT_EQ(run.thumbnails.size(), 6u * 4u);
  EXPECT_EQ(run.thumbnails[0].source_rows, 5) << "encoder: 5 × 5";
  EXPECT_EQ(run.thumbnails[2 * 4].source_rows, 1) << "decoder: its start token";
  EXPECT_EQ(run.thumbnails[4 * 4].source_cols, 5) << "cross: decoder queries × encoder keys";
  ASSERT_TRUE(arrived(heads, 30000));
  session.selectHead(5, 2);  // cross 1, head 2
  ASSERT_TRUE(arrived(heads, 30000, 2));
  const auto cross = heads.at(1).at(0).value<HeatmapData>();
  EXPECT_EQ(cross.rows, 1);
  EXPECT_EQ(cross.cols, 5);
  EXPECT_EQ(cross.title, "cross 1, head 2 — attention pattern");
  double sum = 0;
  for (int c = 0; c < 5; ++c) sum += cross.at(0, c);
  EXPECT_NEAR(sum, 1.0, 1e-5) << "a pattern row over the encoder's keys";
  EXPECT_EQ(failed.count(), 0);
}

TEST(Session, MaskedLmRunSaysWhatEachPositionPredicts) {
  // BERT (tests/data/models/bert, no tokenizer): no [MASK] in the ids, so the run's message
  // names the prediction at the first positions instead of a next token.
  Session session;
  QSignalSpy opened(&session, &Session::modelOpened);
  QSignalSpy finished(&session, &Session::runFinished);
  session.setLoadOptions("cpu", "float32");
  session.open(QString(POSLENS_SOURCE_DIR) + "/tests/data/models/bert");
  ASSERT_TRUE(arrived(opened, 30000));
  session.setInput(RunInput{"5,6,7", true, ""});
  session.run();
  ASSERT_TRUE(arrived(finished, 30000));
  const auto message = finished.at(0).at(0).value<RunSummary>().message;
  EXPECT_TRUE(message.contains("position 0 → ")) << message.toStdString();
  EXPECT_TRUE(message.contains("position 2 → ")) << message.toStdString();
  EXPECT_FALSE(message.contains("next token")) << message.toStdString();
}

}  // namespace
}  // namespace poslens::gui
