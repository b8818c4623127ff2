#pragma once
// The Frequencies panel's plain data made from probe results: shared by the jobs that run the
// probe (frequency_jobs.cpp) and the one that opens the files the CLI wrote (analysis_jobs.cpp).
// LibTorch types: jobs only.
#include <string>

#include "analysis/probe_compare.h"
#include "analysis/rope_probe.h"
#include "app/gui/frequency_types.h"

namespace poslens::gui {

/// Every layer's probe curves: head means, and per head when small enough.
FrequencySummary probe_summary(const ProbeResult& probe, const std::string& note);

/// A comparison's series per layer, each checkpoint's head-mean curves and the last probe.
SeriesSummary series_summary(const CompareResult& result, const QString& folder);

}  // namespace poslens::gui
