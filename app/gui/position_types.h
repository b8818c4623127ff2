#pragma once
// What the Position map panel gets from the worker: one head's real pattern and position-only
// map on the same input (both row-max normalised), how the map was made, and what the head
// counts (CoPE). Plain value types, no LibTorch.
#include <QMetaType>
#include <QString>
#include <QStringList>
#include <vector>

#include "analysis/heatmap_data.h"

namespace poslens::gui {

/// One token type a CoPE head counts (analysis/position_map.h CopeCounting).
struct CountedToken {
  QString token;  ///< display text
  int id = -1;
  double mean_gate = 0;
  int count = 0;  ///< occurrences in the input
};

struct PositionView {
  int layer = 0;
  int head = 0;
  HeatmapData pattern;   ///< hook_pattern, each row scaled to max 1
  HeatmapData position;  ///< the position-only map, each row scaled to max 1
  /// Models with learned sinks (gpt-oss): the sink's share of each row, 1 − Σ_j p_ij, a column
  /// [rows, 1] beside the pattern; empty (rows 0) otherwise.
  HeatmapData sink;
  QString method;        ///< "additive", "cope", "rotary", "absolute", "uniform", ...
  QString explanation;   ///< one line: what the map is for this model
  QStringList counted;   ///< CoPE: the top tokens by mean gate, "token  gate  ×count"
  std::vector<CountedToken> counted_tokens;  ///< CoPE: every token type, highest gate first
  /// Absolute models, layer 0: the logit decomposition (analysis/absolute_terms.h), in the
  /// order token–token, token–position, position–token, position–position, bias.
  std::vector<HeatmapData> absolute_terms;
};

/// Head overview metrics of one input (analysis/heads.h) for colouring the head grid.
struct HeadMetricsSummary {
  int n_layers = 0;
  int n_heads = 0;
  QStringList names;           ///< head_metric_names()
  std::vector<double> values;  ///< [(layer * n_heads + head) * names.size() + metric], NaN: none

  /// One metric for every head, in HeadGrid::setMetric() order.
  std::vector<double> metric(int m) const {
    std::vector<double> out;
    for (int i = 0; i < n_layers * n_heads; ++i)
      out.push_back(values[static_cast<size_t>(i * names.size() + m)]);
    return out;
  }
};

}  // namespace poslens::gui

Q_DECLARE_METATYPE(poslens::gui::PositionView)
Q_DECLARE_METATYPE(poslens::gui::HeadMetricsSummary)
