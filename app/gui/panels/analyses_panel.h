#pragma once
// Analyses panel (bottom dock, a tab beside Frequencies and Position map): the registry's
// analyses that run on the open model and input (analysis/analysis_registry.h, `panel_run`:
// frequency usage, massive activations, divergence against another checkpoint, length loss,
// position offset, Heinsen's states), or any file the CLI wrote for an analysis this panel shows
// (heads and u-shape too), opened without a model (Open file…, File ▸ Open analysis…). Maps side
// by side, curves or a table, a summary line, the weights' SHA-256, and exports: the figure
// (PNG/PDF/SVG) and the CLI's CSV.
#include <string>

#include "app/gui/analysis_types.h"
#include "app/gui/frequency_types.h"
#include "app/gui/position_types.h"
#include "app/gui/panels/panel.h"

class QComboBox;
class QLabel;
class QPushButton;
class QSpinBox;
class QSplitter;
class QTableWidget;

namespace poslens {
class CurvePlot;
class HeatmapView;
}

namespace poslens::gui {

class AnalysesPanel : public Panel {
  Q_OBJECT
 public:
  explicit AnalysesPanel(Session& session);
  QString title() const override { return tr("Analyses"); }
  QString id() const override { return QStringLiteral("analyses"); }
  Placement placement() const override { return Placement::Bottom; }
  QWidget* widget() override { return widget_; }

  bool hasFigure() const override;
  bool exportFigure(const QString& path, FigureFormat format, QString* error) override;
  /// Writes the shown result's CSV (the same text as the CLI's) atomically.
  bool exportCsv(const QString& path, QString* error) const;

  /// Runs the registry's analysis `analysis` ("frequency-usage", …, one with `panel_run`) on the
  /// session's model and input and selects it in the chooser; "divergence" compares with the
  /// checkpoint `other`, "length-loss" reads the text file `other`. A name the panel does not
  /// run shows a dialog.
  void run(const std::string& analysis, const QString& other = {});
  /// The analyses the chooser offers, in its order (registry names).
  QStringList choices() const;
  /// Shows the analysis file at `path` (the CLI's HDF5), read on the worker; a probe or
  /// comparison file goes to the Frequencies panel (frequencyFileOpened).
  void openFile(const QString& path);

 signals:
  /// A probe (no series) or comparison file was opened: the Frequencies panel shows it.
  void frequencyFileOpened(const poslens::gui::SeriesSummary& summary);
  /// A position-map file was opened: the Position map panel shows its first head.
  void positionFileOpened(const poslens::gui::PositionView& view);

 public:
  const AnalysisView& shown() const { return shown_; }
  HeatmapView* leftView() const { return left_; }
  CurvePlot* curvePlot() const { return curves_; }
  /// Position offset: Δ.
  void setOffset(int offset);
  QTableWidget* table() const { return table_; }

 private:
  void show(const AnalysisView& view);
  /// The registry name of the chooser's current analysis.
  std::string chosen() const;
  void exportDialog();

  QWidget* widget_ = nullptr;
  QComboBox* analysis_ = nullptr;
  QSpinBox* layer_ = nullptr;
  QSpinBox* offset_ = nullptr;  ///< Position offset: Δ
  QSpinBox* head_ = nullptr;    ///< a capture file's head shown
  QString file_;                ///< the analysis file shown (a capture file re-reads its heads)
  bool rotary_ = false;         ///< the open model rotates q and k (RoPE scalings apply)
  QPushButton* run_ = nullptr;
  QPushButton* export_ = nullptr;
  QLabel* summary_ = nullptr;
  QLabel* provenance_ = nullptr;
  QSplitter* maps_ = nullptr;
  HeatmapView* left_ = nullptr;
  HeatmapView* right_ = nullptr;
  HeatmapView* third_ = nullptr;
  QTableWidget* table_ = nullptr;
  CurvePlot* curves_ = nullptr;
  AnalysisView shown_;
};

}  // namespace poslens::gui
