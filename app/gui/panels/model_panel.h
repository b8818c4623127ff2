#pragma once
// Model panel (left dock): what is loaded — core describe()'s format, architecture, position
// encoding, sizes and dtypes — scrolling when long.
#include "app/gui/panels/panel.h"

class QLabel;
class QScrollArea;

namespace poslens::gui {

class ModelPanel : public Panel {
  Q_OBJECT
 public:
  explicit ModelPanel(Session& session);
  QString title() const override { return tr("Model"); }
  QString id() const override { return QStringLiteral("model"); }
  Placement placement() const override { return Placement::Left; }
  QWidget* widget() override;

 private:
  QScrollArea* scroll_ = nullptr;
  QLabel* info_ = nullptr;
};

}  // namespace poslens::gui
