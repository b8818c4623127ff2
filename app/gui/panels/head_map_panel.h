#pragma once
// The centre: the selected head's map as a large heatmap with token axes, colour scale and
// hover read-out. Its figure is what File ▸ Export figure writes. A long map arrives pooled to
// the view's cells; zooming in until the visible part fits the cells asks the worker for that
// region at full resolution (Session::requestRegion), drawn over the pooled map.
#include "app/gui/panels/panel.h"

class QTimer;

namespace poslens {
class HeatmapView;
}

namespace poslens::gui {

class HeadMapPanel : public Panel {
  Q_OBJECT
 public:
  explicit HeadMapPanel(Session& session);
  QString title() const override { return tr("Head map"); }
  QString id() const override { return QStringLiteral("head_map"); }
  Placement placement() const override { return Placement::Central; }
  QWidget* widget() override;

  bool hasFigure() const override;
  bool exportFigure(const QString& path, FigureFormat format, QString* error) override;

 private:
  /// After the view settles: the visible region at full resolution when it fits the cells.
  void requestDetail();

  HeatmapView* view_ = nullptr;
  QTimer* settle_ = nullptr;
};

}  // namespace poslens::gui
