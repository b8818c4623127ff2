#pragma once
// What a plain analysis hands to every face: the maps and curves the GUI and --figure draw, the
// CSV, the HDF5 writer and a summary line. An analysis that needs one model, one input and no
// options of its own returns this (AnalysisEntry::run, ::read, analysis_registry.h), and the
// CLI subcommand, the sweep item, the Analyses panel's choice, its job and its file reader come
// for free: the analysis is then its module, its registry line and its tests.
#include <functional>
#include <string>
#include <vector>

#include "analysis/curve_data.h"
#include "analysis/heatmap_data.h"
#include "core/formats/hdf5_export.h"

namespace poslens {

struct AnalysisResult {
  std::string title;                ///< what and of which checkpoint: "Value norms of stories260K"
  std::string summary;              ///< the finding in one or two lines (the CLI prints it)
  std::vector<HeatmapData> maps;    ///< drawn side by side, at most three; may be empty
  CurveSet curves;                  ///< may be empty
  std::string csv;                  ///< what --out x.csv holds
  /// Writes the HDF5 file at `path` (atomic: the previous file or none) with `meta` as its root
  /// attributes. Throws poslens::Error.
  std::function<void(const std::string& path, const ExportMetadata& meta)> write_hdf5;
};

}  // namespace poslens
