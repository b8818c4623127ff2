#pragma once
// The one thread that owns the loaded model and every LibTorch call on it (ARCHITECTURE.md
// "The GUI stays responsive"). The GUI talks to it through queued signals/slots and receives
// small value results (heatmap buffers, text); it never holds a tensor. LibTorch stays out of
// this header (pimpl) so GUI translation units compile fast and Qt's `slots` macro never meets
// torch headers.
#include <QObject>
#include <QString>
#include <QStringList>

#include <atomic>
#include <memory>
#include <vector>

#include "analysis/heatmap_data.h"

namespace poslens::gui {

struct ModelSummary {
  QString path;
  QString description;  ///< multi-line text of core describe()
  int n_layers = 0;
  int n_heads = 0;
  bool has_tokenizer = false;
  /// The per-head maps this model can show, as hook suffixes ("hook_pattern",
  /// "hook_attn_scores", and where the position encoding has them "hook_pos_scores",
  /// "hook_cope_gates", "hook_cope_pos"); the pattern comes first.
  QStringList views;
};

struct RunSummary {
  quint64 generation = 0;
  int n_layers = 0;
  int n_heads = 0;
  QStringList tokens;                        ///< one label per position
  std::vector<poslens::HeatmapData> thumbnails;  ///< index layer * n_heads + head, pooled small
  QString message;                           ///< timing and next-token prediction
};

class InferenceWorker : public QObject {
  Q_OBJECT
 public:
  explicit InferenceWorker(QObject* parent = nullptr);
  ~InferenceWorker() override;

  /// Thread-safe: asks the running forward pass to stop at the next layer boundary.
  void requestCancel() { cancel_ = true; }
  /// Thread-safe: the newest run generation the GUI asked for; older queued runs are skipped.
  void setLatestGeneration(quint64 g) { latest_generation_ = g; }

 public slots:
  /// Loads a checkpoint (file or folder); emits opened() or failed().
  void openCheckpoint(const QString& path, const QString& device, const QString& dtype);
  /// Runs the model on `input` (text, or comma-separated ids when `as_token_ids`), capturing
  /// the hook names/globs in `captures` (comma-separated) plus every layer's `view` (a hook
  /// suffix of ModelSummary::views) and attention pattern; the thumbnails show `view`.
  /// Emits progress(), then runFinished(), cancelled() or failed().
  void run(quint64 generation, const QString& input, bool as_token_ids, const QString& captures,
           const QString& view);
  /// The full-size (pooled to at most `max_cells` per axis) map of `view` for one head of the
  /// last run; emits headReady().
  void requestHead(int layer, int head, int max_cells, const QString& view);
  /// Writes every capture of the last run as HDF5; emits exported() or failed().
  void exportCaptures(const QString& path);

 signals:
  void opened(const poslens::gui::ModelSummary& summary);
  void progress(int done, int total);
  void runFinished(const poslens::gui::RunSummary& summary);
  void headReady(const poslens::HeatmapData& heatmap);
  void exported(const QString& path);
  void cancelled();
  void failed(const QString& title, const QString& message);

 private:
  struct State;
  std::unique_ptr<State> state_;
  std::atomic<bool> cancel_{false};
  std::atomic<quint64> latest_generation_{0};
};

}  // namespace poslens::gui

Q_DECLARE_METATYPE(poslens::gui::ModelSummary)
Q_DECLARE_METATYPE(poslens::gui::RunSummary)
Q_DECLARE_METATYPE(poslens::HeatmapData)
