#pragma once
// What the Position map panel gets from the worker: one head's real pattern and position-only
// map on the same input (both row-max normalised), how the map was made, and what the head
// counts (CoPE). Plain value types, no LibTorch.
#include <QMetaType>
#include <QString>
#include <QStringList>

#include "analysis/heatmap_data.h"

namespace poslens::gui {

struct PositionView {
  int layer = 0;
  int head = 0;
  HeatmapData pattern;   ///< hook_pattern, each row scaled to max 1
  HeatmapData position;  ///< the position-only map, each row scaled to max 1
  QString method;        ///< "additive", "cope", "rotary", "absolute", "uniform", ...
  QString explanation;   ///< one line: what the map is for this model
  QStringList counted;   ///< CoPE: tokens by mean gate, "token  gate  ×count", highest first
};

}  // namespace poslens::gui

Q_DECLARE_METATYPE(poslens::gui::PositionView)
