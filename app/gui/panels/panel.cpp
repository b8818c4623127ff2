#include "app/gui/panels/panel.h"

namespace poslens::gui {

bool Panel::exportFigure(const QString& path, FigureFormat, QString* error) {
  if (error) *error = tr("Cannot export '%1': the %2 panel has no figure").arg(path, title());
  return false;
}

}  // namespace poslens::gui
