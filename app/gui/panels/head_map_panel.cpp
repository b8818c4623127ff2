#include "app/gui/panels/head_map_panel.h"

#include <QShortcut>
#include <QTimer>

#include <algorithm>

#include "app/gui/session.h"
#include "widgets/heatmap_view.h"

namespace poslens::gui {

HeadMapPanel::HeadMapPanel(Session& session) : Panel(session) {
  view_ = new HeatmapView;
  view_->setObjectName(QStringLiteral("head_map_view"));
  auto* reset = new QShortcut(QKeySequence("Ctrl+0"), view_);  // also: double-click the map
  reset->setContext(Qt::WindowShortcut);
  connect(reset, &QShortcut::activated, view_, &HeatmapView::resetView);
  connect(&session, &Session::headReady, this, [this](const HeatmapData& map) {
    view_->setHeatmap(map);
    emit figureChanged();
  });
  // Zoom and pan come as many small steps: ask once the view has been still a moment.
  settle_ = new QTimer(this);
  settle_->setSingleShot(true);
  settle_->setInterval(150);
  connect(settle_, &QTimer::timeout, this, &HeadMapPanel::requestDetail);
  connect(view_, &HeatmapView::viewChanged, settle_, qOverload<>(&QTimer::start));
  connect(&session, &Session::regionReady, this, [this](const HeatmapData& region) {
    const auto& shown = view_->heatmap();
    if (view_->hasHeatmap() && region.layer == shown.layer && region.head == shown.head)
      view_->setDetail(region);
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

void HeadMapPanel::requestDetail() {
  if (!view_->hasHeatmap() || !view_->heatmap().pooled()) return;
  const auto visible = view_->visibleSource();
  if (!visible) return;
  const int64_t extent = std::max(visible->q1 - visible->q0, visible->k1 - visible->k0);
  if (extent > Session::kHeadMapCells) {  // zoomed out: the pooled map is what fits
    view_->clearDetail();
    return;
  }
  if (const auto& d = view_->detail();
      d && d->row_offset <= visible->q0 && d->col_offset <= visible->k0 &&
      d->row_offset + d->source_rows >= visible->q1 && d->col_offset + d->source_cols >= visible->k1)
    return;  // already shown
  // The visible part and half as much around it, so a short pan stays sharp.
  const int64_t margin = extent / 2;
  const auto& shown = view_->heatmap();
  session().requestRegion(shown.layer, shown.head, std::max<int64_t>(0, visible->q0 - margin),
                          std::min(shown.source_rows, visible->q1 + margin),
                          std::max<int64_t>(0, visible->k0 - margin),
                          std::min(shown.source_cols, visible->k1 + margin));
}

bool HeadMapPanel::hasFigure() const { return view_->hasHeatmap(); }

bool HeadMapPanel::exportFigure(const QString& path, FigureFormat format, QString* error) {
  // PNG at a fixed print-friendly size; vector formats at the on-screen layout.
  const bool png = format == FigureFormat::Png;
  return view_->exportFigure(path, format, error, png ? 1600 : 0, png ? 1400 : 0);
}

}  // namespace poslens::gui
