#pragma once
// Position map panel (bottom dock, a tab beside Frequencies): the selected head's real pattern
// and its position-only map side by side on the same input (Golovneva et al. 2024 Fig. 4; docs/formulas.md §3), zoom,
// pan and hover linked between the two, a line saying how the map was made for this model, and
// for CoPE heads the tokens the head counts, ranked by mean gate; for absolute models' layer 0
// the right view can show each term of the logit decomposition instead (Kernes 2021); for models with
// learned sinks (gpt-oss) a narrow column between the two shows the sink's share of each row. Computed on the worker
// (docs/position-maps.md); once computed it follows the head selected in the Heads panel.
#include "app/gui/panels/panel.h"
#include "app/gui/position_types.h"

class QComboBox;
class QLabel;
class QListWidget;
class QPushButton;
class QSpinBox;

namespace poslens {
class HeatmapView;
}

namespace poslens::gui {

class PositionMapPanel : public Panel {
  Q_OBJECT
 public:
  explicit PositionMapPanel(Session& session);
  QString title() const override { return tr("Position map (pattern | position only)"); }
  QString id() const override { return QStringLiteral("position_map"); }
  Placement placement() const override { return Placement::Bottom; }
  QWidget* widget() override { return widget_; }

  bool hasFigure() const override;
  /// Writes both views side by side (pattern | the right view, the sink column between them
  /// when shown) in `format`.
  bool exportFigure(const QString& path, FigureFormat format, QString* error) override;
  /// Writes the shown maps as CSV to `path`, one row per visible (query, key) cell: layer, head,
  /// q_pos, k_pos, tokens, pattern and the right view's value (pooled maps: a block's first
  /// positions). CoPE heads also get `<name>-counted.csv` (every token type, mean gate, count),
  /// models with learned sinks `<name>-sink.csv` (q_pos, query token, sink_share per shown row).
  /// `*written` gets the files written.
  bool exportData(const QString& path, QStringList* written, QString* error);
  /// The Export… button: PNG/PDF/SVG figure or CSV data, chosen in a file dialog.
  void exportDialog();

  HeatmapView* patternView() const { return pattern_; }
  HeatmapView* positionView() const { return position_; }
  /// The learned sink's column (hidden unless the model has learned sinks).
  HeatmapView* sinkView() const { return sink_; }
  /// Absolute models, layer 0: shows in the right view the position-only map (0) or logit term
  /// `index` - 1 of the decomposition (token–token, token–position, position–token,
  /// position–position, bias).
  void showRight(int index);
  /// Asks for the selected head's maps on the session's input (the Compute button).
  void compute();
  /// Shows maps read from a position-map file (no model needed; head selections do not
  /// recompute them).
  void showFile(const PositionView& view);
  /// The maps of the shown head (the last result).
  const PositionView& shown() const { return shown_; }

 private:
  /// Submits head (layer, head)'s maps on the session's input (jobs/jobs.h positions_job).
  void request(int layer, int head);
  void show(const PositionView& view);

  QWidget* widget_ = nullptr;
  QPushButton* compute_ = nullptr;
  QPushButton* export_ = nullptr;
  QSpinBox* probe_samples_ = nullptr;  ///< rotary models: tokens of the probe behind the map
  QLabel* info_ = nullptr;
  QComboBox* right_ = nullptr;  ///< absolute models: the position-only map or a logit term
  PositionView shown_;
  HeatmapView* pattern_ = nullptr;
  HeatmapView* position_ = nullptr;
  HeatmapView* sink_ = nullptr;  ///< PositionView::sink, between the two maps
  QListWidget* counted_ = nullptr;
  bool following_ = false;  ///< a result is shown: new head selections fetch their maps
};

}  // namespace poslens::gui
