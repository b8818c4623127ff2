#pragma once
// The PosLens main window: a model dock, an input dock (text, Run/Cancel, progress), a head
// grid dock (with a "Show" selector: pattern, logits, position scores, CoPE gates/positions)
// and the selected head's heatmap in the centre. All model work goes to the
// InferenceWorker thread; this class only shows results and forwards requests.
#include <QMainWindow>
#include <QThread>

#include "app/gui/inference_worker.h"

class QAction;
class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QMenu;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;

namespace poslens {
class HeadGrid;
class HeatmapView;
}  // namespace poslens

namespace poslens::gui {

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  /// Starts loading `path` (file or HF folder) on the worker thread.
  void openCheckpoint(const QString& path);
  /// Sets the input text and starts a run once a model is loaded (used by the command line).
  void setInputText(const QString& text);
  void runWhenLoaded() { run_when_loaded_ = true; }
  /// Selects the view with hook suffix `view` (e.g. "hook_cope_gates") once a model that has
  /// it is loaded (used by the command line).
  void setPreferredView(const QString& view) { preferred_view_ = view; }

  HeadGrid* headGrid() const { return grid_; }
  HeatmapView* heatmapView() const { return heatmap_; }
  InferenceWorker* worker() const { return worker_; }
  /// The "Show" selector of the Heads dock: one entry per ModelSummary::views (data = suffix).
  QComboBox* viewSelector() const { return view_; }

 signals:
  // Requests to the worker thread (queued connections).
  void requestOpen(const QString& path, const QString& device, const QString& dtype);
  void requestRun(quint64 generation, const QString& input, bool as_token_ids,
                  const QString& captures, const QString& view);
  void requestHead(int layer, int head, int max_cells, const QString& view);
  void requestExport(const QString& path);

 public slots:
  void run();
  void cancel();

 protected:
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;
  void closeEvent(QCloseEvent* event) override;

 private:
  void buildMenus();
  void buildDocks();
  void setBusy(bool busy, const QString& what);
  void addRecent(const QString& path);
  void refreshRecentMenu();
  void onOpened(const ModelSummary& summary);
  void onRunFinished(const RunSummary& summary);
  void onFailed(const QString& title, const QString& message);
  void exportFigure(const QString& format);
  void exportCaptures();
  /// The hook suffix the Heads dock shows ("hook_pattern", "hook_cope_gates", ...).
  QString currentView() const;

  QThread thread_;
  InferenceWorker* worker_ = nullptr;  // lives on thread_
  HeadGrid* grid_ = nullptr;
  HeatmapView* heatmap_ = nullptr;
  QLabel* model_info_ = nullptr;
  QPlainTextEdit* input_ = nullptr;
  QCheckBox* token_ids_ = nullptr;
  QLineEdit* captures_ = nullptr;
  QComboBox* device_ = nullptr;
  QComboBox* dtype_ = nullptr;
  QComboBox* view_ = nullptr;
  QPushButton* run_button_ = nullptr;
  QPushButton* cancel_button_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* run_message_ = nullptr;
  QMenu* recent_menu_ = nullptr;
  QAction* export_png_ = nullptr;
  QAction* export_pdf_ = nullptr;
  QAction* export_h5_ = nullptr;
  quint64 generation_ = 0;
  bool model_loaded_ = false;
  bool has_run_ = false;
  bool run_when_loaded_ = false;
  QString preferred_view_;
};

}  // namespace poslens::gui
