// The RoPE frequency analyses for the Frequencies panel (analysis/probe.h,
// text_decomposition.h, compare.h) as Work: curves of every layer as plain data.
#include "app/gui/worker_context.h"

#include "app/gui/jobs/frequency_summaries.h"
#include "app/gui/jobs/jobs.h"

#include <QObject>

#include <chrono>
#include <filesystem>

#include "analysis/checkpoint_series.h"
#include "analysis/frequency_curves.h"
#include "analysis/compare.h"
#include "analysis/probe.h"
#include "analysis/text_decomposition.h"
#include "core/runtime/model_input.h"

namespace poslens::gui {
namespace {

/// Per-head curves are sent when all of them hold at most this many values.
constexpr int64_t kMaxCurveValues = 20'000'000;
/// A decomposition's component maps (float32) are sent when they hold at most this many values
/// (128 MB): every head's and the mean's, else the mean's alone (component_maps()).
constexpr int64_t kMaxMapValues = 32'000'000;

ProbeOptions probe_options(const ProbeRequest& request) {
  ProbeOptions options;
  options.length = request.length;
  options.samples = request.samples;
  options.seed = request.seed;
  return options;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

FrequencySummary probe_summary(const ProbeResult& probe, const std::string& note) {
  FrequencySummary s;
  s.n_layers = static_cast<int>(probe.scores.size(0));
  s.n_heads = static_cast<int>(probe.scores.size(1));
  const int64_t values = probe.scores.size(0) * (probe.scores.size(1) + 1) *
                         (probe.components.size(2) + 1) * probe.T;
  s.per_head = values <= kMaxCurveValues;
  s.curves.resize(static_cast<size_t>(s.n_layers * (s.n_heads + 1)));
  for (int l = 0; l < s.n_layers; ++l)
    for (int h = -1; h < (s.per_head ? s.n_heads : 0); ++h)
      s.curves[static_cast<size_t>(l * (s.n_heads + 1) + h + 1)] = probe_curves(probe, l, h, note);
  return s;
}

FrequencySummary decomposition_summary(const TextDecomposition& d, int n_layers, int n_heads, const std::string& name) {
  FrequencySummary summary;
  summary.n_layers = n_layers;
  summary.n_heads = n_heads;
  summary.per_head = true;
  summary.from_input = true;
  summary.curves.resize(static_cast<size_t>(n_layers * (n_heads + 1)));
  const int kept = static_cast<int>(d.components.size(0));  // every head, or the one kept
  for (int h = -1; h < kept; ++h) {
    const int head = d.head >= 0 ? (h < 0 ? -1 : d.head) : h;
    summary.curves[static_cast<size_t>(d.layer * (n_heads + 1) + head + 1)] = text_curves(d, h, name);
  }
  for (auto& c : summary.curves)
    for (auto& label : c.key_labels) label = display_label(label);
  summary.maps = component_maps(d, kMaxMapValues, name);
  for (auto& label : summary.maps.labels) label = display_label(label);
  return summary;
}

SeriesSummary series_summary(const CompareResult& result, const QString& folder) {
  SeriesSummary summary;
  summary.folder = folder;
  for (int l = 0; l < static_cast<int>(result.vaf.size(1)); ++l) {
    summary.per_layer.push_back(compare_series(result, l));
    summary.checkpoint_curves.emplace_back();
    for (size_t i = 0; i < result.probes.size(); ++i)
      summary.checkpoint_curves.back().push_back(probe_curves(result.probes[i], l, -1, result.names[i]));
  }
  summary.last = probe_summary(result.probes.back(), std::filesystem::path(result.names.back()).filename().string());
  return summary;
}

Work probe_job(const ProbeRequest& request) {
  return [request](WorkerContext& ctx) -> std::any {
    const auto& loaded = ctx.model();
    auto options = probe_options(request);
    const bool overlay = request.extrapolate_to > request.length;
    const auto start = std::chrono::steady_clock::now();
    const auto result = run_probe(loaded, options, ctx.progress().part(0, overlay ? 0.5 : 1).counter());
    const double seconds = seconds_since(start);
    const std::string name = std::filesystem::path(loaded.path).filename().string();
    auto summary = probe_summary(result, name);
    if (overlay) {
      options.length = request.extrapolate_to;
      options.tokens = result.tokens;
      summary.overlay = probe_summary(run_probe(loaded, options, ctx.progress().part(0.5, 0.5).counter()), name).curves;
    }
    summary.note = QObject::tr("probe T=%1%2, %3 tokens, %4 s")
                       .arg(request.length)
                       .arg(overlay ? QObject::tr(" and T=%1").arg(request.extrapolate_to) : QString())
                       .arg(result.n_samples)
                       .arg(seconds, 0, 'f', 2);
    return summary;
  };
}

Work decompose_job(const RunInput& input, int layer) {
  return [input, layer](WorkerContext& ctx) -> std::any {
    const auto& loaded = ctx.model();
    const auto ids = input_ids(loaded, input);
    const auto start = std::chrono::steady_clock::now();
    const auto d = decompose_text(loaded, ids, layer);
    auto summary = decomposition_summary(d, static_cast<int>(loaded.model->config().n_layers),
                                         static_cast<int>(loaded.model->config().n_heads),
                                         std::filesystem::path(loaded.path).filename().string());
    summary.note = QObject::tr("%1 tokens, decomposed in %2 s").arg(ids.size()).arg(seconds_since(start), 0, 'f', 2);
    return summary;
  };
}

Work compare_job(const QString& folder, const ProbeRequest& request) {
  return [folder, request](WorkerContext& ctx) -> std::any {
    LoadOptions load;
    load.device = ctx.model().model->device().str();
    const auto paths = series_checkpoints(folder.toStdString());
    const auto start = std::chrono::steady_clock::now();
    const auto result = compare_checkpoints(paths, load, probe_options(request), ctx.progress().counter());
    auto summary = series_summary(result, folder);
    summary.last.note = QObject::tr("%1 checkpoints, probe T=%2, %3 tokens each, %4 s")
                            .arg(paths.size())
                            .arg(request.length)
                            .arg(result.probes.back().n_samples)
                            .arg(seconds_since(start), 0, 'f', 1);
    return summary;
  };
}

}  // namespace poslens::gui
