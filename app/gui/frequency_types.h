#pragma once
// What the Frequencies panel asks the worker for and gets back (queued signals): plain value
// types, no LibTorch. Curves come for every layer, as the head mean and (when small enough)
// per head, so choosing a layer or head redraws without running the probe again.
#include <QMetaType>
#include <QString>
#include <vector>

#include "analysis/component_maps.h"
#include "analysis/frequency_data.h"

namespace poslens::gui {

struct ProbeRequest {
  int length = 0;          ///< T
  int samples = 0;         ///< 0: every non-special token
  quint64 seed = 0;
  int extrapolate_to = 0;  ///< a second probe at this T for the overlay; 0: none
};

struct FrequencySummary {
  int n_layers = 0;
  int n_heads = 0;
  bool per_head = false;  ///< false when per-head curves were too large to send
  bool from_input = false;  ///< the user's input decomposed (one layer), not the probe
  /// Index layer * (n_heads + 1) + head + 1 (head -1 = the head mean); only the head means
  /// (index layer * (n_heads + 1)) when !per_head.
  std::vector<FrequencyCurves> curves;
  std::vector<FrequencyCurves> overlay;  ///< same indexing; empty without extrapolation
  /// from_input: the decomposed layer's whole maps per component (the component map view).
  ComponentMaps maps;
  QString note;                          ///< timing and sample count for the status line

  const FrequencyCurves* find(const std::vector<FrequencyCurves>& from, int layer, int head) const {
    const size_t i = static_cast<size_t>(layer * (n_heads + 1) + head + 1);
    return layer >= 0 && layer < n_layers && head >= -1 && head < n_heads && i < from.size() &&
                   !from[i].empty()
               ? &from[i]
               : nullptr;
  }
};

struct SeriesSummary {
  QString folder;
  std::vector<VafSeries> per_layer;  ///< [layer]
  /// [layer][checkpoint]: each checkpoint's head-mean probe curves (drawn under the last one's).
  std::vector<std::vector<FrequencyCurves>> checkpoint_curves;
  FrequencySummary last;             ///< the probe of the last checkpoint
};

}  // namespace poslens::gui

Q_DECLARE_METATYPE(poslens::gui::ProbeRequest)
Q_DECLARE_METATYPE(poslens::gui::FrequencySummary)
Q_DECLARE_METATYPE(poslens::gui::SeriesSummary)
