#include "app/gui/panels/heads_panel.h"

#include <QComboBox>
#include <QFormLayout>
#include <QSignalBlocker>
#include <QVBoxLayout>

#include "app/gui/session.h"
#include "app/gui/view_names.h"
#include "widgets/head_grid.h"

namespace poslens::gui {

HeadsPanel::HeadsPanel(Session& session) : Panel(session) {
  view_ = new QComboBox;
  view_->setObjectName("viewSelector");
  view_->setToolTip(tr("Which per-head map the thumbnails and the centre view show"));
  grid_ = new HeadGrid;
  widget_ = new QWidget;
  widget_->setMinimumWidth(300);
  auto* layout = new QVBoxLayout(widget_);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* show_row = new QFormLayout;
  show_row->setContentsMargins(8, 4, 8, 0);
  show_row->addRow(tr("Show"), view_);
  layout->addLayout(show_row);
  layout->addWidget(grid_, 1);

  connect(view_, &QComboBox::currentIndexChanged, this, [this] {
    this->session().setView(view_->currentData().toString());
  });
  connect(grid_, &HeadGrid::headSelected, &session, &Session::selectHead);

  connect(&session, &Session::modelOpened, this, [this](const ModelSummary& model) {
    grid_->clear();
    const QSignalBlocker quiet(view_);  // filling the list is not a choice of view
    view_->clear();
    for (const auto& view : model.views) view_->addItem(viewLabel(view), view);
  });
  connect(&session, &Session::viewChanged, this, [this](const QString& view) {
    const QSignalBlocker quiet(view_);
    if (const int i = view_->findData(view); i >= 0) view_->setCurrentIndex(i);
  });
  connect(&session, &Session::runFinished, this, [this](const RunSummary& run) {
    grid_->setHeads(run.n_layers, run.n_heads, run.thumbnails);
    grid_->fitThumbnailsToWidth();
  });
  connect(&session, &Session::runCleared, grid_, &HeadGrid::clear);
  connect(&session, &Session::headSelected, this, [this](int layer, int head) {
    const QSignalBlocker quiet(grid_);  // the Session already knows
    grid_->selectHead(layer, head);
  });
}

}  // namespace poslens::gui
