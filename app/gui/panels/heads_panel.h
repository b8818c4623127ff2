#pragma once
// Heads panel (right dock): "Show" picks the per-head map (pattern, logits, position scores,
// CoPE gates/positions), and a layers x heads grid of thumbnails selects the head the centre
// shows (click or arrow keys; each selection asks the Session, which keeps only the latest).
#include "app/gui/panels/panel.h"

class QComboBox;

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

 private:
  QWidget* widget_ = nullptr;
  QComboBox* view_ = nullptr;
  HeadGrid* grid_ = nullptr;
};

}  // namespace poslens::gui
