#pragma once
// The centre: the selected head's map as a large heatmap with token axes, colour scale and
// hover read-out. Its figure is what File ▸ Export figure writes.
#include "app/gui/panels/panel.h"

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
  HeatmapView* view_ = nullptr;
};

}  // namespace poslens::gui
