#pragma once
// Frequencies panel (bottom dock): the RoPE frequency analysis of the open model (Chen et al. 2024
// §4; docs/frequencies.md). Runs the U-shape probe on the worker (progress and Cancel through
// the session), then shows for the chosen layer and head (or the head mean) the probe curves
// with chosen components, the VAF bars with the activated band and HoPE's cut, the
// extrapolation overlay, and — for a checkpoint of a run folder, or a folder picked — VAF
// against training step. "On input" decomposes the input's real scores; its "component map"
// view shows one component's term over every query and key. One line says what is shown and on
// what input. Export writes the figure shown (PNG/PDF/SVG) or its data (CSV).
#include <any>
#include <optional>

#include "app/gui/frequency_types.h"
#include "app/gui/panels/panel.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QStackedWidget;

namespace poslens {
class FrequencyPlot;
class HeatmapView;
}

namespace poslens::gui {

class FrequenciesPanel : public Panel {
  Q_OBJECT
 public:
  explicit FrequenciesPanel(Session& session);
  QString title() const override { return tr("Frequencies (RoPE components, U-shape probe, VAF)"); }
  QString id() const override { return QStringLiteral("frequencies"); }
  Placement placement() const override { return Placement::Bottom; }
  QWidget* widget() override { return widget_; }

  bool hasFigure() const override;
  bool exportFigure(const QString& path, FigureFormat format, QString* error) override;
  /// Writes the shown data as CSV (FrequencyPlot::exportCsv); `written` gets the paths.
  bool exportData(const QString& path, QStringList* written, QString* error);

  FrequencyPlot* plot() const { return plot_; }
  /// The component map view (shown instead of the curves when the view box says so).
  HeatmapView* map() const { return map_; }
  /// Whether the component map is the view shown.
  bool showingMap() const;
  /// Shows the curves (false) or the component map of `component` (true), as the view box and
  /// the component box do.
  void showMap(bool on, int component = -1);
  /// Starts the probe with the panel's settings (the Run probe button).
  void runProbe();
  /// The shown probe or decomposition, and the shown series comparison (after their jobs).
  const std::optional<FrequencySummary>& probe() const { return probe_; }
  const std::optional<SeriesSummary>& series() const { return series_result_; }
  /// Decomposes the selected layer's real scores on the session's input (the On input button).
  void decomposeInput();
  /// Starts the comparison of `folder`'s step-* checkpoints (empty: the open model's series).
  void compareSeries(const QString& folder = {});
  /// Shows a probe (summary.per_layer empty) or a series read from a file the CLI wrote.
  void showFile(const SeriesSummary& summary);

 private:
  ProbeRequest request() const;
  void onModelOpened();
  void showSelection();
  /// The component box's range: the shown decomposition's components.
  void fitComponentBox();
  /// Draws the decomposition's map of the chosen component for the chosen head (or says why not).
  void showComponentMap();
  /// A probe or decomposition result (FrequencySummary) arrived.
  void showProbe(const std::any& result);
  void exportDialog();

  QWidget* widget_ = nullptr;
  QSpinBox* length_ = nullptr;
  QSpinBox* samples_ = nullptr;
  QSpinBox* extrapolate_ = nullptr;
  QSpinBox* layer_ = nullptr;
  QCheckBox* per_head_ = nullptr;
  QCheckBox* difference_ = nullptr;  ///< series: curves and VAF minus the first checkpoint's
  QComboBox* x_axis_ = nullptr;
  QComboBox* view_ = nullptr;       ///< curves or component map
  QSpinBox* map_component_ = nullptr;
  QLineEdit* components_ = nullptr;
  QPushButton* run_ = nullptr;
  QPushButton* input_ = nullptr;
  QPushButton* series_ = nullptr;
  QPushButton* folder_ = nullptr;
  QPushButton* export_ = nullptr;
  QLabel* info_ = nullptr;
  FrequencyPlot* plot_ = nullptr;
  HeatmapView* map_ = nullptr;
  QStackedWidget* views_ = nullptr;  ///< plot_ or map_

  std::optional<FrequencySummary> probe_;
  std::optional<SeriesSummary> series_result_;
  QString series_folder_;
  int selected_head_ = 0;
  bool model_open_ = false;  ///< a model is open (the probe can run)
  bool model_rotates_ = false;   ///< its q and k rotate (the input can be decomposed)
};

}  // namespace poslens::gui
