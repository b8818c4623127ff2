#pragma once
// Heads panel (right dock): "Show" picks the per-head map (pattern, logits, position scores,
// CoPE gates/positions), and a layers x heads grid of thumbnails selects the head the centre
// shows (click or arrow keys; each selection asks the Session, which keeps only the latest).
// "Colour" paints the grid by a head metric of the input instead (entropy, mean distance,
// sink, previous token, position share) with its range as a legend, and lists the heads
// ranked by it (click one to select it).
#include <optional>

#include "app/gui/panels/panel.h"
#include "app/gui/position_types.h"

class QComboBox;
class QLabel;
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

 private:
  QWidget* widget_ = nullptr;
  void showMetric();

  QComboBox* view_ = nullptr;
  QComboBox* colour_ = nullptr;
  QLabel* legend_ = nullptr;
  QListWidget* ranking_ = nullptr;
  HeadGrid* grid_ = nullptr;
  std::optional<HeadMetricsSummary> metrics_;
};

}  // namespace poslens::gui
