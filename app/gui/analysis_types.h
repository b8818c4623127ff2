#pragma once
// What the Analyses panel gets from the worker: one analysis result as the panel shows it —
// two maps side by side (frequency usage, divergence) or a table (massive activations, head
// metrics) — with a summary line and the CSV the CLI writes for the same result. Made from a
// model run or from an HDF5 file the CLI wrote (File ▸ Open analysis…). Plain value types.
#include <QMetaType>
#include <QString>
#include <QStringList>
#include <string>
#include <vector>

#include "analysis/curve_data.h"
#include "analysis/heatmap_data.h"

namespace poslens::gui {

struct AnalysisView {
  QString kind;        ///< "frequency-usage", "massive-activations", "divergence", "heads"
  QString title;       ///< what and of which checkpoint(s)
  QString summary;     ///< one or two lines: the finding and where it came from
  QString provenance;  ///< checkpoint, weights SHA-256, file (when opened)
  HeatmapData left, right;  ///< the maps (empty for table results)
  HeatmapData third;        ///< a third map beside them (Heinsen's logits), may be empty
  CurveSet curves;          ///< curves (length loss, massive activations' magnitudes), may be empty
  QStringList table_header;
  std::vector<QStringList> table_rows;
  std::string csv;           ///< the same text as the CLI's --out x.csv
  QString file_stem;         ///< default export name

  bool has_maps() const { return !left.values.empty(); }
  bool has_curves() const { return !curves.empty(); }
};

}  // namespace poslens::gui

Q_DECLARE_METATYPE(poslens::gui::AnalysisView)
