#pragma once
// The one thread that owns the loaded model and every LibTorch call on it (ARCHITECTURE.md
// "The GUI stays responsive"). The Session posts one job at a time to it (the job methods
// below, called on the worker thread); every signal carries the job's generation so the
// Session can drop whatever a stale job still sends. The GUI receives small value results and
// never holds a tensor. LibTorch stays out of this header (pimpl) so GUI translation units
// compile fast and Qt's `slots` macro never meets torch headers.
#include <QObject>
#include <QString>

#include <memory>

#include "app/gui/frequency_types.h"
#include "app/gui/position_types.h"
#include "app/gui/run_types.h"

namespace poslens::gui {

class InferenceWorker : public QObject {
  Q_OBJECT
 public:
  explicit InferenceWorker(QObject* parent = nullptr);
  ~InferenceWorker() override;

  // --- Jobs: each ends with exactly one of its result signal, failed() or cancelled(). ---

  /// Loads a checkpoint (file or folder). Core loads tensor by tensor without a progress hook,
  /// so loading cannot stop half-way: a job cancelled meanwhile throws the loaded model away
  /// when loading returns (the previous model stays) and emits cancelled(). Emits opened().
  void open(const JobTicket& job, const QString& path, const QString& device, const QString& dtype);
  /// Runs the model on `input`, capturing only `view` (a hook suffix of ModelSummary::views) of
  /// every layer: the thumbnails and the head map need nothing else. Emits progress() per
  /// layer, then runFinished(). The result replaces the last run.
  void run(const JobTicket& job, const RunInput& input, const QString& view);
  /// The map of `view` for one head of the last run, max-pooled to at most `max_cells` per
  /// axis. Emits headReady().
  void head(const JobTicket& job, int layer, int head, int max_cells, const QString& view);
  /// Re-runs `input` capturing `captures` (comma-separated hook names/globs) and writes them
  /// as HDF5 to `path`; the captures are freed afterwards and the last run is kept. Emits
  /// progress() per layer, then exported().
  void exportCaptures(const JobTicket& job, const QString& path, const RunInput& input,
                      const QString& captures);
  /// The U-shape probe (and the extrapolation probe) on the open model: curves of every layer.
  /// Emits progress() in samples, then probeReady().
  void probe(const JobTicket& job, const ProbeRequest& request);
  /// The per-component decomposition of layer `layer`'s real scores on `input` (every head and
  /// their mean, the last query's row). Emits probeReady() with that layer's curves.
  void decomposeInput(const JobTicket& job, const RunInput& input, int layer);
  /// One head's pattern and position-only map on `input` (analysis/position_map.h), pooled to
  /// `max_cells` per axis. The maps of every head are computed once per input and kept, so the
  /// next head of the same input is immediate. Emits progress(), then positionsReady().
  void positions(const JobTicket& job, const RunInput& input, int layer, int head, int max_cells);
  /// Entropy, mean distance, sink, previous-token and position share of every head on `input`
  /// (analysis/head_metrics.h). Emits progress() per layer, then metricsReady().
  void headMetrics(const JobTicket& job, const RunInput& input);
  /// The probe on every step-* checkpoint of `folder` (loaded one at a time beside the open
  /// model): VAF against step per layer. Emits progress(), then seriesReady().
  void compareSeries(const JobTicket& job, const QString& folder, const ProbeRequest& request);

 signals:
  void opened(quint64 generation, const poslens::gui::ModelSummary& summary);
  void progress(quint64 generation, int done, int total);
  void runFinished(quint64 generation, const poslens::gui::RunSummary& summary);
  void headReady(quint64 generation, const poslens::HeatmapData& heatmap);
  void exported(quint64 generation, const QString& path);
  void probeReady(quint64 generation, const poslens::gui::FrequencySummary& summary);
  void seriesReady(quint64 generation, const poslens::gui::SeriesSummary& summary);
  void positionsReady(quint64 generation, const poslens::gui::PositionView& view);
  void metricsReady(quint64 generation, const poslens::gui::HeadMetricsSummary& metrics);
  void cancelled(quint64 generation);
  void failed(quint64 generation, const QString& title, const QString& message);
  /// Emitted after every job, whatever its outcome: the Session then sends the next one.
  void jobDone(quint64 generation);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace poslens::gui
