#pragma once
// The Analyses panel's views (AnalysisView, plain data) made from the analysis/ modules' results:
// one function per analysis, shared by the jobs that compute on the open model
// (analysis_jobs.cpp) and the reader of files the CLI wrote (analysis_file_readers.cpp). Only
// jobs/*.cpp include this (it brings LibTorch through the analysis headers).
#include <QString>

#include <string>
#include <vector>

#include "analysis/analysis_result.h"
#include "analysis/analysis_views.h"
#include "analysis/length_loss.h"
#include "analysis/position_offset.h"
#include "analysis/u_shape.h"
#include "app/gui/analysis_types.h"

namespace poslens {
struct LoadedModel;
}

namespace poslens::gui {

/// "checkpoint C · weights SHA-256 S[ · with interventions I][ · opened from F]", the line
/// under every view.
QString provenance(const std::string& checkpoint, const std::string& sha256, const QString& file = {},
                   const std::string& interventions = {});
/// The checkpoint's file name, the views' short name for a model.
std::string stem(const std::string& checkpoint);
/// `v` with the open model's checkpoint and weights digest under it.
AnalysisView of_model(AnalysisView v, const LoadedModel& loaded);

/// Frequency usage: layer `layer`'s head map beside the layer means (clamped to the layers there).
AnalysisView usage_view(const FrequencyUsage& u, int layer, const std::string& name);
/// Massive activations: a table of each layer's largest |h| and the curve over layers.
AnalysisView massive_view(const MassiveActivations& m, const std::vector<std::string>& labels, const std::string& name);
/// JS divergence per head and per query between two models' patterns.
AnalysisView divergence_view(const PatternDivergence& d, const std::vector<std::string>& labels,
                             const std::string& title);
/// The head metrics of a `heads` file as a table: one row per head, one column per metric.
/// `values` [layer, head, metric], double.
AnalysisView heads_view(const at::Tensor& values, const std::vector<std::string>& names, const std::string& name);
/// Loss per position, one curve per RoPE scaling; `L` the training length (0: unknown).
AnalysisView length_view(const std::vector<LossCurve>& curves, int64_t L, const std::string& name);
/// The U-shape probe of several models overlaid (Chen et al. 2024 Fig. 1).
AnalysisView u_shape_view(const UShapes& u);
/// A head's patterns at offset 0 and Δ side by side, JS per head in the summary.
AnalysisView offset_view(const OffsetEffect& e, const std::vector<std::string>& labels, const std::string& name,
                         const std::string& method);
/// A plain analysis's result (analysis/analysis_result.h; AnalysisEntry::run or ::read) as the
/// panel's view of kind `analysis`: its maps side by side (up to three), curves, CSV, summary.
AnalysisView result_view(const std::string& analysis, const AnalysisResult& r);
/// Heinsen's states, decay probabilities and logits as three maps.
AnalysisView heinsen_view(const HeinsenStates& s, const std::vector<std::string>& labels, const std::string& name);

}  // namespace poslens::gui
