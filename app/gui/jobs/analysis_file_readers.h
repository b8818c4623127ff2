#pragma once
// The views of the HDF5 files the CLI wrote, read without a model (File ▸ Open analysis…): one
// reader per kind of file, each checking the shapes it reads and naming the file when they do
// not fit. Used by open_analysis_job (open_analysis_job.cpp); jobs/*.cpp only (LibTorch).
#include <QString>

#include <string>

#include "app/gui/analysis_types.h"
#include "app/gui/frequency_types.h"
#include "app/gui/position_types.h"
#include "core/formats/hdf5_reader.h"

namespace poslens::gui {

/// A file the Frequencies panel shows (the registry's ShownIn::Frequencies): a probe
/// (`/analysis/probe`), a series (`/analysis/compare`, a merged sweep of probes) or a
/// `frequencies` decomposition (decomposition_file, as `last`): a SeriesSummary, its per_layer
/// empty but for a series.
SeriesSummary frequency_file(const Hdf5Reader& file, const QString& path);

/// A `frequencies` file (`/analysis/frequencies`, one layer's scores on the input split by
/// rotary component) as the Frequencies panel's curves.
FrequencySummary decomposition_file(const Hdf5Reader& file, const QString& path);

/// A `position-map` file: the first written head's pattern and position-only map (pooled as
/// written), read one head at a time.
PositionView position_file(const Hdf5Reader& file);

/// A run's capture file (`/captures`): the captured hooks as a table and head `head`'s maps of
/// layer `layer` (hook_pattern, beside hook_attn_scores when captured), read alone.
AnalysisView captures_view(const Hdf5Reader& file, int layer, int head);

/// A file of one of the Analyses panel's analyses (the registry's entries shown in
/// ShownIn::Analyses, analysis/analysis_registry.h), read by the analysis's own reader
/// (read_*_hdf5, beside its writer) and made into its view; `name` the model's short name.
/// Throws Error naming the file when it holds none of them or their shapes do not fit.
AnalysisView analysis_panel_file(const Hdf5Reader& file, const std::string& name);
/// Whether analysis_panel_file has a reader for the registry's analysis `analysis`.
bool analyses_panel_reads(const std::string& analysis);

}  // namespace poslens::gui
