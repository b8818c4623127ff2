#pragma once
// The analyses the panels ask the worker for, as Work for Session::submit(): each factory takes
// the request's plain values and returns the function the worker runs (jobs/*.cpp, the only
// GUI files besides inference_worker.cpp that see LibTorch), whose std::any result is the view's
// plain data (*_types.h). A new analysis in the GUI is a factory here, its file, and a panel
// that submits it.
#include <QString>

#include <any>
#include <functional>

#include "app/gui/analysis_types.h"
#include "app/gui/frequency_types.h"
#include "app/gui/position_types.h"
#include "app/gui/run_types.h"

namespace poslens::gui {

class WorkerContext;

/// What Session::submit() runs on the worker thread; its value reaches the submitter's
/// callback on the GUI thread.
using Work = std::function<std::any(WorkerContext&)>;

/// The U-shape probe (and its extrapolation overlay) of the open model -> FrequencySummary.
Work probe_job(const ProbeRequest& request);
/// Layer `layer`'s real scores on `input` split per rotary component -> FrequencySummary.
Work decompose_job(const RunInput& input, int layer);
/// The probe over the step-* checkpoints of `folder` -> SeriesSummary.
Work compare_job(const QString& folder, const ProbeRequest& request);
/// Head (`layer`, `head`)'s pattern and position-only map on `input`, max-pooled to `cells` per
/// side, with what it counts (CoPE) and the absolute terms (layer 0) -> PositionView. Rotary
/// models: the probe behind the map runs `probe_samples` forward passes of the input's length
/// (0: every token), once per length and count.
Work positions_job(const RunInput& input, int layer, int head, int cells, int probe_samples);
/// Entropy, mean distance, sinks, the head detectors and position share of every head on
/// `input`, streamed -> HeadMetricsSummary.
Work metrics_job(const RunInput& input);

/// The open model's mean ‖q⁽ᶜ⁾‖ per head and rotary component on `input`, the head map of
/// `layer` beside the layer means -> AnalysisView.
Work frequency_usage_job(const RunInput& input, int layer);
/// The largest residual activations per layer on `input` -> AnalysisView.
Work massive_activations_job(const RunInput& input);
/// The JS divergence between the open model's patterns and those of `checkpoint` (loaded for
/// this job only) on `input` -> AnalysisView.
Work divergence_job(const RunInput& input, const QString& checkpoint);
/// The loss at each position of the text file `text_file` in windows of 4·L, with the RoPE
/// scalings `scalings` (rope_scaling_json specs; "none" first) -> AnalysisView with curves.
Work length_loss_job(const QString& text_file, const QStringList& scalings);
/// Every position shifted by `offset`: JS per head against Δ = 0 on `input`, head (`layer`,
/// `head`)'s two patterns side by side -> AnalysisView.
Work position_offset_job(const RunInput& input, int64_t offset, int layer, int head);
/// Heinsen's states, decay probabilities and logits on `input` -> AnalysisView (three maps).
Work heinsen_states_job(const RunInput& input);
/// A plain analysis of the registry (AnalysisEntry::run, e.g. "value-norms") on `input` ->
/// AnalysisView (result_view).
Work plain_analysis_job(const RunInput& input, const std::string& analysis);
/// An analysis file the CLI wrote, read without a model: any analysis the registry shows in
/// the Analyses panel (heads, massive-activations, …, value-norms) -> AnalysisView;
/// probe -> SeriesSummary with no series (its `last`); compare or a merged sweep of probes ->
/// SeriesSummary. Fails with a message naming the file for another version's, a truncated or
/// a foreign file.
/// A run's captures (`poslens-cli run`) -> AnalysisView: every captured hook and its shape as a
/// table, and layer `layer`'s hook_pattern (beside its hook_attn_scores when captured) of the
/// `head`-th stored head (head-selected captures store only some heads), sequence 0.
Work open_analysis_job(const QString& path, int layer = 0, int head = 0);

}  // namespace poslens::gui
