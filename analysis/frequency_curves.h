#pragma once
// From the frequency analyses' tensors to the plain curves the views draw (frequency_data.h).
#include "analysis/component_maps.h"
#include "analysis/frequency_data.h"
#include "analysis/compare.h"
#include "analysis/probe.h"
#include "analysis/text_decomposition.h"

namespace poslens {

/// Layer `layer`'s probe curves for `head` (-1: the head mean, with the head-mean VAF).
/// Throws poslens::Error for a layer or head out of range.
FrequencyCurves probe_curves(const ProbeResult& probe, int layer, int head,
                             const std::string& input_note);

/// The last query's row of a decomposition of real scores (head index into d's heads, -1 for
/// their mean; the head number shown is d.head when one head was kept). VAF is over every
/// allowed (query, key) entry of the map, not just the last row. Throws poslens::Error for a
/// head out of range.
FrequencyCurves text_curves(const TextDecomposition& d, int head, const std::string& input_note);

/// A decomposition's whole-map component terms (every query row) as ComponentMaps: the head mean
/// and every decomposed head when (heads + 1)·C·T² values fit in `max_values`; the head mean alone
/// when C·T² fits; none otherwise (ComponentMaps::note says which). Masked entries are NaN.
/// Labels are d.labels as they are; the caller may make them displayable.
ComponentMaps component_maps(const TextDecomposition& d, int64_t max_values, const std::string& input_note);

/// VAF against checkpoint for layer `layer` (head mean).
VafSeries compare_series(const CompareResult& compare, int layer);

}  // namespace poslens
