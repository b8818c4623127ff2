#pragma once
// The Frequencies panel's plain data made from probe results: shared by the jobs that run the
// probe (frequency_jobs.cpp) and the readers of the files the CLI wrote (analysis_file_readers.cpp).
// LibTorch types: jobs only.
#include <string>

#include "analysis/compare.h"
#include "analysis/probe.h"
#include "analysis/text_decomposition.h"
#include "app/gui/frequency_types.h"

namespace poslens::gui {

/// Every layer's probe curves: head means, and per head when small enough.
FrequencySummary probe_summary(const ProbeResult& probe, const std::string& note);

/// The curves of a decomposition of the input (one layer; one head or all) for a model of
/// `n_layers` × `n_heads`, the key labels shown as display_label().
FrequencySummary decomposition_summary(const TextDecomposition& d, int n_layers, int n_heads, const std::string& name);

/// A comparison's series per layer, each checkpoint's head-mean curves and the last probe.
SeriesSummary series_summary(const CompareResult& result, const QString& folder);

}  // namespace poslens::gui
