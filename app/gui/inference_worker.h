#pragma once
// The one thread that owns the loaded model and every LibTorch call on it (docs/architecture.md
// "The life of a run"). The Session posts one job at a time to it (the job methods
// below, called on the worker thread); every signal carries the job's generation so the
// Session can drop whatever a stale job still sends. The GUI receives small value results and
// never holds a tensor. LibTorch stays out of this header (pimpl) so GUI translation units
// compile fast and Qt's `slots` macro never meets torch headers.
//
// Nothing here grows with layers × heads × T²: a run keeps what each layer's attention is
// computed from (q and k, O(L·T·d)) and pooled thumbnails; a head's map is recomputed from
// that when it is shown, pooled to the view, and a region of it at full resolution when the
// view zooms in.
#include <QObject>
#include <QString>

#include <any>
#include <memory>

#include "app/gui/jobs/jobs.h"
#include "app/gui/run_types.h"

namespace poslens::gui {

/// A head's map to show: the whole map max-pooled to `cells` per side, or (region set) rows
/// [q0, q1) × keys [k0, k1) at full resolution (pooled only when larger than `cells`).
struct HeadRequest {
  int layer = 0;
  int head = 0;
  QString view;  ///< hook suffix, e.g. "hook_pattern"
  int cells = 1024;
  bool region = false;
  qint64 q0 = 0, q1 = 0, k0 = 0, k1 = 0;
};

class InferenceWorker : public QObject {
  Q_OBJECT
 public:
  explicit InferenceWorker(QObject* parent = nullptr);
  ~InferenceWorker() override;

  // --- Jobs: each ends with exactly one of its result signal, failed() or cancelled(). ---

  /// Loads a checkpoint (file or folder). Progress per stored tensor; a job cancelled
  /// meanwhile stops between two tensors (the previous model stays) and emits cancelled().
  /// Emits opened().
  void open(const JobTicket& job, const QString& path, const QString& device, const QString& dtype);
  /// Runs the model on `input`: keeps what each layer's attention is computed from and the
  /// thumbnails of `view` (a hook suffix of ModelSummary::views) for every head, max-pooled.
  /// Emits progress() per layer, then runFinished(). Replaces the last run.
  void run(const JobTicket& job, const RunInput& input, const QString& view);
  /// A head's map of the last run (HeadRequest), recomputed from its attention inputs. Emits
  /// headReady().
  void head(const JobTicket& job, const HeadRequest& request);
  /// Re-runs `input` streaming `captures` (comma-separated hook names/globs) into HDF5 at
  /// `path`. Emits progress() per layer, then exported().
  void exportCaptures(const JobTicket& job, const QString& path, const RunInput& input,
                      const QString& captures);
  /// Replaces the open model by the checkpoint's with the interventions `specs`
  /// (Session::setInterventions; empty: the checkpoint as stored). Checks them first: one that
  /// does not parse or apply fails the job and changes nothing. Drops the last run. Emits
  /// opened() with the new summary.
  void intervene(const JobTicket& job, const QStringList& specs);
  /// Runs `work` (Session::submit) and emits result() with its value.
  void execute(const JobTicket& job, const Work& work);

  /// What the worker keeps between jobs (inference_worker.cpp).
  struct State;

 signals:
  void opened(quint64 generation, const poslens::gui::ModelSummary& summary);
  /// `done` of `total` units (layers, tensors, or thousandths of a job).
  void progress(quint64 generation, int done, int total);
  void runFinished(quint64 generation, const poslens::gui::RunSummary& summary);
  void headReady(quint64 generation, const poslens::HeatmapData& heatmap);
  void exported(quint64 generation, const QString& path);
  void result(quint64 generation, const std::any& value);
  void cancelled(quint64 generation);
  void failed(quint64 generation, const QString& title, const QString& message);
  /// Emitted after every job, whatever its outcome: the Session then sends the next one.
  void jobDone(quint64 generation);

 private:
  std::unique_ptr<State> state_;
};

}  // namespace poslens::gui

Q_DECLARE_METATYPE(std::any)
