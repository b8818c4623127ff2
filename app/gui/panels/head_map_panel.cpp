#include "app/gui/panels/head_map_panel.h"

#include <QShortcut>

#include "app/gui/session.h"
#include "widgets/heatmap_view.h"

namespace poslens::gui {

HeadMapPanel::HeadMapPanel(Session& session) : Panel(session) {
  view_ = new HeatmapView;
  auto* reset = new QShortcut(QKeySequence("Ctrl+0"), view_);  // also: double-click the map
  reset->setContext(Qt::WindowShortcut);
  connect(reset, &QShortcut::activated, view_, &HeatmapView::resetView);
  connect(&session, &Session::headReady, this, [this](const HeatmapData& map) {
    view_->setHeatmap(map);
    emit figureChanged();
  });
  connect(&session, &Session::runCleared, this, [this] {
    view_->clear();
    emit figureChanged();
  });
  connect(&session, &Session::modelOpened, this, [this] {
    view_->clear();
    emit figureChanged();
  });
}

QWidget* HeadMapPanel::widget() { return view_; }

bool HeadMapPanel::hasFigure() const { return view_->hasHeatmap(); }

bool HeadMapPanel::exportFigure(const QString& path, FigureFormat format, QString* error) {
  // PNG at a fixed print-friendly size; vector formats at the on-screen layout.
  const bool png = format == FigureFormat::Png;
  return view_->exportFigure(path, format, error, png ? 1600 : 0, png ? 1400 : 0);
}

}  // namespace poslens::gui
