#pragma once
// The panels of the main window, in the order they are placed (docks of one area stack
// top to bottom).
#include <memory>
#include <vector>

#include "app/gui/panels/panel.h"

namespace poslens::gui {

/// Creates every panel of the main window, connected to `session`.
std::vector<std::unique_ptr<Panel>> createPanels(Session& session);

}  // namespace poslens::gui
