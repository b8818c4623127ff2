#pragma once
// The demo checkpoints shipped in resources/demos/ (made by `poslens-cli train`, see
// resources/demos/README.md), as the Demo models menu and scripts/gui.sh open them: each with
// an input in its task's notation and the view that shows what it learned.
#include <QString>

#include <vector>

namespace poslens::gui {

struct DemoModel {
  QString name;   ///< "flipflop-cope", or "text-rope-series/step-000300" for a series member
  QString path;   ///< the model folder
  QString text;   ///< a sample input in the task's notation
  QString view;   ///< hook suffix to show first: hook_cope_gates for CoPE models, else hook_pattern
};

/// Where the demos are: $POSLENS_DEMOS_DIR when set, else <executable>/../share/poslens/demos
/// when it exists (installed), else the source tree's resources/demos (compiled in, for a
/// build tree). May not exist.
QString demoModelsDir();

/// Every model folder (holding config.json) in `dir`, sorted by name; a folder of step-*
/// model folders (a training series) gives one entry per step. Empty when `dir` is missing.
std::vector<DemoModel> findDemoModels(const QString& dir);

}  // namespace poslens::gui
