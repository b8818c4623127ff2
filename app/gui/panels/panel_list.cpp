#include "app/gui/panels/panel_list.h"

#include "app/gui/panels/analyses_panel.h"
#include "app/gui/panels/frequencies_panel.h"
#include "app/gui/panels/head_map_panel.h"
#include "app/gui/panels/heads_panel.h"
#include "app/gui/panels/input_panel.h"
#include "app/gui/panels/interventions_panel.h"
#include "app/gui/panels/model_panel.h"
#include "app/gui/panels/position_map_panel.h"

namespace poslens::gui {

std::vector<std::unique_ptr<Panel>> createPanels(Session& session) {
  std::vector<std::unique_ptr<Panel>> panels;
  // One line per panel: a new analysis panel is one more line here.
  panels.push_back(std::make_unique<HeadMapPanel>(session));
  panels.push_back(std::make_unique<ModelPanel>(session));
  panels.push_back(std::make_unique<InputPanel>(session));
  panels.push_back(std::make_unique<InterventionsPanel>(session));
  panels.push_back(std::make_unique<HeadsPanel>(session));
  panels.push_back(std::make_unique<FrequenciesPanel>(session));
  panels.push_back(std::make_unique<PositionMapPanel>(session));
  panels.push_back(std::make_unique<AnalysesPanel>(session));
  return panels;
}

}  // namespace poslens::gui
