#pragma once
// Heads panel (right dock): "Show" picks the per-head map (pattern, logits, position scores,
// CoPE gates/positions), and a layers x heads grid of thumbnails selects the head the centre
// shows (click or arrow keys; each selection asks the Session, which keeps only the latest).
// "Colour" paints the grid by a head metric of the input instead (entropy, mean distance,
// sink, previous token, position share) with its range as a legend, and lists the heads
// ranked by it (click one to select it), highest or lowest first, optionally only those at or
// beyond a threshold (the others greyed in the grid). Export… writes the coloured grid
// (PNG/PDF/SVG) or every metric of every head (CSV).
#include <optional>
#include <vector>

#include "app/gui/panels/panel.h"
#include "app/gui/position_types.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QListWidget;

namespace poslens {
class HeadGrid;
}

namespace poslens::gui {

class HeadsPanel : public Panel {
  Q_OBJECT
 public:
  explicit HeadsPanel(Session& session);
  QString title() const override { return tr("Heads (layers × heads)"); }
  QString id() const override { return QStringLiteral("heads"); }
  Placement placement() const override { return Placement::Right; }
  QWidget* widget() override { return widget_; }
  HeadGrid* grid() const { return grid_; }
  /// Colours the grid by metric `index` of head_metric_names() (-1: thumbnails), computing the
  /// metrics of the input first when needed.
  void colourBy(int index);
  /// Ranks highest first (true) or lowest first.
  void setSortDescending(bool descending);
  /// Keeps only heads with the metric >= `threshold` (highest first) or <= it (lowest first);
  /// nullopt shows every head.
  void setFilter(std::optional<double> threshold);
  /// Heads (layer * n_heads + head) in the ranking as shown now.
  std::vector<int> rankedHeads() const;
  /// Writes every metric of every head as CSV (layer, head, one column per metric).
  bool exportMetricsCsv(const QString& path, QString* error) const;
  /// Writes the grid as shown (thumbnails or metric colours) as a figure.
  bool exportGrid(const QString& path, FigureFormat format, QString* error) const;

  /// The head metrics of the input, once computed.
  const std::optional<HeadMetricsSummary>& metrics() const { return metrics_; }

 private:
  QWidget* widget_ = nullptr;
  void showMetric();

  QComboBox* view_ = nullptr;
  QComboBox* colour_ = nullptr;
  QLabel* legend_ = nullptr;
  QListWidget* ranking_ = nullptr;
  QComboBox* order_ = nullptr;
  QCheckBox* only_ = nullptr;
  QDoubleSpinBox* threshold_ = nullptr;
  QPushButton* export_ = nullptr;
  void exportDialog();
  /// Shows or hides the sort and filter controls (only while a metric colours the grid).
  void showFilter(bool visible);
  HeadGrid* grid_ = nullptr;
  std::optional<HeadMetricsSummary> metrics_;
};

}  // namespace poslens::gui
