#include "analysis/component_maps.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

namespace poslens {

bool ComponentMaps::has(int head) const { return std::find(heads.begin(), heads.end(), head) != heads.end(); }

HeatmapData component_map(const ComponentMaps& maps, int head, int component) {
  HeatmapData map;
  const auto at = std::find(maps.heads.begin(), maps.heads.end(), head);
  if (at == maps.heads.end() || component < 0 || component >= maps.n_components) return map;
  const int64_t T = maps.T;
  const auto first = (static_cast<int64_t>(at - maps.heads.begin()) * maps.n_components + component) * T * T;
  map.rows = map.cols = map.source_rows = map.source_cols = T;
  map.values.assign(maps.values.begin() + first, maps.values.begin() + first + T * T);
  map.row_labels = map.col_labels = maps.labels;
  map.kind = HeatmapKind::Signed;
  map.value_name = "score term";
  map.layer = maps.layer;
  map.head = head;
  const double theta = maps.theta[static_cast<size_t>(component)];
  std::ostringstream title;
  title << "L" << maps.layer << (head < 0 ? " head mean" : " H" + std::to_string(head)) << " · component c"
        << component << " of the scores, θ = " << std::setprecision(3) << theta << " rad/position";
  if (theta > 0) title << ", wavelength " << std::setprecision(4) << 2 * M_PI / theta << " positions";
  else title << " (does not rotate)";
  if (!maps.input_note.empty()) title << " · " << maps.input_note;
  map.title = title.str();
  return map;
}

}  // namespace poslens
