#pragma once
// Session: everything the GUI knows about the open model and its runs, with no widget in
// sight, so it is tested without a window (tests/gui/test_session.cpp). It owns the
// InferenceWorker thread and the one job queue to it; panels read its state and call its
// requests, and listen to its signals.
//
// The queue: every job has a tag ("open", "run", "head", "export", or a panel's analysis:
// "probe", "positions", ...). A newer job replaces a
// still-queued job of the same tag; a running job of that tag is cancelled (the worker checks
// the cancel flag per layer). Head and region maps go before queued analyses (they take
// milliseconds, a probe minutes). Jobs go to the worker one at a time, and every result, progress,
// failure and cancellation the worker sends carries its job's generation: the Session passes
// on only what belongs to the running job while it is not cancelled, so nothing stale reaches
// a view. (Idea from RenderDoc's ReplayManager and Hotspot's JobTracker.)
#include <QObject>
#include <QPointer>
#include <QThread>

#include <any>
#include <deque>
#include <functional>
#include <optional>

#include "app/gui/frequency_types.h"
#include "app/gui/inference_worker.h"
#include "app/gui/jobs/jobs.h"
#include "app/gui/position_types.h"
#include "app/gui/run_types.h"

namespace poslens::gui {

class Session : public QObject {
  Q_OBJECT
 public:
  /// Largest map the head view is sent; larger maps are max-pooled on the worker.
  static constexpr int kHeadMapCells = 1024;
  /// The export capture spec of a new session: what poslens-cli captures by default.
  static constexpr const char* kDefaultExportCaptures = "blocks.*.attn.hook_pattern,logits";

  explicit Session(QObject* parent = nullptr);
  /// Cancels whatever runs and waits for the worker thread to finish.
  ~Session() override;

  // --- Requests ------------------------------------------------------------------------

  /// Loads `path` (file or folder) with the device and dtype of setLoadOptions(). Drops queued
  /// runs, heads and exports and cancels a running one: they belong to the old model.
  void open(const QString& path);
  /// Device ("auto", "cpu", "cuda") and dtype applied by the next open().
  void setLoadOptions(const QString& device, const QString& dtype);
  /// The text (or comma-separated token ids) the next run() reads; emits inputChanged().
  void setInput(const RunInput& input);
  /// The input's text from a UTF-8 file (token ids too: commas, spaces or lines, with "Input is
  /// token ids" ticked), at most kMaxInputTextBytes; the input stays as it was and failed()
  /// names the file and what is wrong when it cannot be read, is too large or is not UTF-8.
  void openInputText(const QString& path);
  static constexpr qint64 kMaxInputTextBytes = qint64{16} << 20;
  /// Runs the model on input() capturing only view(). Refused with failed() (no job) when no
  /// model is open or the input is empty. Drops head requests of the previous run.
  void run();
  /// Shows per-head map `view` (a ModelSummary::views suffix); re-runs when a run was shown,
  /// since runs capture only the shown view. Emits viewChanged().
  void setView(const QString& view);
  /// The view to pick when a model that has it opens (the command line's --view).
  void setPreferredView(const QString& view) { preferred_view_ = view; }
  /// Selects a head and asks the worker for its map (emits headSelected(), later headReady()).
  void selectHead(int layer, int head);
  /// The hooks (comma-separated names or globs, `*` = all) exportCaptures() captures.
  void setExportCaptures(const QString& captures);
  /// Re-runs the input of the newest run (finished, running or queued) with
  /// exportCaptureSpec() and writes HDF5 to `path`. Refused with failed() when there is none.
  void exportCaptures(const QString& path);
  /// Runs `work` (an analysis, jobs/jobs.h) on the worker as a job of `tag`: a newer job of
  /// the same tag replaces it, Cancel stops it, and `on_result` gets its value on the GUI
  /// thread unless it was superseded, cancelled or failed (failed() then). A non-empty
  /// `busy_text` marks the session busy meanwhile (status bar, progress).
  void submit(const QString& tag, const QString& busy_text, Work work,
              std::function<void(const std::any&)> on_result);
  /// True when a model is open and, with `needs_input`, the input is not empty; otherwise
  /// emits failed(`title`, why) and returns false. Panels check before submit().
  bool ready(const QString& title, bool needs_input);
  /// A region of the selected head's map at full resolution (tag "region"; the view zoomed in):
  /// rows [q0, q1) × keys [k0, k1) of the last run, pooled only when larger than kHeadMapCells.
  /// Emits regionReady().
  void requestRegion(int layer, int head, qint64 q0, qint64 q1, qint64 k0, qint64 k1);
  /// Runs the open model from now on with the interventions `specs` (poslens-cli's
  /// --intervene values: "p-rope=0.5", "temperature=L3H1:2", "no-sinks", "mask-first-key";
  /// analysis/interventions.h), applied to the checkpoint as stored — an empty list restores
  /// it. Like open(): queued work is dropped, then modelOpened() brings the model's new summary
  /// (ModelSummary::interventions) and the last run is gone. A spec that does not parse or
  /// apply leaves the model as it was and emits failed() naming it.
  void setInterventions(const QStringList& specs);
  /// Cancels every queued job and the running one; each emits cancelled() once.
  void cancel();

  // --- State ---------------------------------------------------------------------------

  bool hasModel() const { return model_.has_value(); }
  /// The open model (empty ModelSummary when none).
  ModelSummary model() const { return model_.value_or(ModelSummary{}); }
  RunInput input() const { return input_; }
  /// The last completed run (nullopt before the first, and after open()).
  const std::optional<RunSummary>& lastRun() const { return last_run_; }
  QString view() const { return view_; }
  /// The interventions the open model runs with (setInterventions' specs), empty for the
  /// checkpoint as stored.
  QStringList interventions() const { return interventions_; }
  std::pair<int, int> selectedHead() const { return selected_; }
  QString exportCaptureSpec() const { return export_captures_; }
  /// True while a job with a busy text (open, run, export, analyses) is queued or running
  /// (head maps and regions do not count).
  bool isBusy() const;
  /// The worker object (on its own thread); for tests that watch its raw signals.
  InferenceWorker* worker() const { return worker_; }

 signals:
  /// A job of `tag` started or ended that makes the session busy; `what` says what for the
  /// status bar ("Loading x.bin…"), empty when no longer busy.
  void busyChanged(bool busy, const QString& what);
  /// A job of `tag` was sent to the worker (tests count these).
  void jobStarted(const QString& tag, quint64 generation);
  void modelOpened(const poslens::gui::ModelSummary& summary);
  void inputChanged(const poslens::gui::RunInput& input);
  void viewChanged(const QString& view);
  /// Per-layer progress of the running open, run or export (total 0: indeterminate).
  void progress(int done, int total);
  void runFinished(const poslens::gui::RunSummary& summary);
  /// The last run is gone without a newer one to show (a run started, then was cancelled or
  /// failed: the worker frees the old captures when a run starts). Views of it should clear.
  void runCleared();
  void headSelected(int layer, int head);
  void headReady(const poslens::HeatmapData& heatmap);
  /// A region requested with requestRegion() (HeatmapData::row_offset/col_offset set).
  void regionReady(const poslens::HeatmapData& heatmap);
  void exported(const QString& path);
  /// A submitted job of `tag` delivered its result (after its callback ran).
  void jobFinished(const QString& tag);
  /// A job of `tag` ended because of cancel() (not because a newer job replaced it).
  void cancelled(const QString& tag);
  void failed(const QString& title, const QString& message);

 private:
  struct Job {
    QString tag;
    JobTicket ticket;
    QString busy_text;  ///< empty for jobs that do not make the session busy
    RunInput input;     ///< what a "run" job reads (becomes the export's input when it ends)
    QStringList specs;  ///< what an "intervene" job applies
    std::function<void(InferenceWorker&, const JobTicket&)> body;
    std::function<void(const std::any&)> on_result;  ///< submitted jobs
  };

  /// Queues `job` last or, `ahead_of_analyses`, before the first queued job that is not an open or
  /// a run.
  void enqueue(Job job, bool ahead_of_analyses = false);
  /// Queues a head (or region) map of the last run's view, under `tag`.
  void enqueueHead(const QString& tag, HeadRequest request);
  /// Drops queued jobs of `tag` and cancels a running one, silently (they were superseded).
  void supersede(const QString& tag);
  void dispatchNext();
  bool queued(const QString& tag) const;
  /// Cancels every queued job and the running one, silently (no cancelled() signals): for a
  /// new model, new interventions, or the end of the session.
  void dropAllWork();
  /// True when a worker signal with `generation` belongs to the running, uncancelled job.
  bool current(quint64 generation) const;
  void onJobDone(quint64 generation);
  void updateBusy();
  void connectWorker();

  QThread thread_;
  InferenceWorker* worker_ = nullptr;  // lives on thread_, deleted when it finishes
  std::deque<Job> queue_;
  std::optional<Job> running_;
  quint64 next_generation_ = 0;
  bool busy_ = false;
  QString busy_what_;

  std::optional<ModelSummary> model_;
  std::optional<RunSummary> last_run_;
  RunInput input_;
  RunInput last_run_input_;
  QString view_ = QStringLiteral("hook_pattern");
  QStringList interventions_;
  QString preferred_view_;
  std::pair<int, int> selected_{-1, -1};
  QString export_captures_ = QString::fromLatin1(kDefaultExportCaptures);
  QString device_ = QStringLiteral("auto");
  QString dtype_ = QStringLiteral("float32");
};

}  // namespace poslens::gui

Q_DECLARE_METATYPE(poslens::gui::RunInput)
