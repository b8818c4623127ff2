#include "app/gui/panels/model_panel.h"

#include <QLabel>
#include <QScrollArea>

#include "app/gui/session.h"

namespace poslens::gui {

ModelPanel::ModelPanel(Session& session) : Panel(session) {
  info_ = new QLabel(tr("No checkpoint open.\n\nFile ▸ Open, or drop a file here."));
  info_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  info_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  info_->setFont(QFont("monospace", 9));
  info_->setWordWrap(true);
  info_->setContentsMargins(8, 6, 8, 6);
  scroll_ = new QScrollArea;  // long descriptions scroll instead of being cut
  scroll_->setWidget(info_);
  scroll_->setWidgetResizable(true);
  scroll_->setFrameShape(QFrame::NoFrame);
  connect(&session, &Session::modelOpened, this,
          [this](const ModelSummary& model) { info_->setText(model.description); });
}

QWidget* ModelPanel::widget() { return scroll_; }

}  // namespace poslens::gui
