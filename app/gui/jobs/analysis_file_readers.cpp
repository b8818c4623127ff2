// The views of the files the CLI wrote (see analysis_file_readers.h).
#include "app/gui/worker_context.h"

#include "app/gui/jobs/analysis_file_readers.h"

#include <QFileInfo>
#include <QObject>

#include <algorithm>

#include "analysis/analysis_files.h"
#include "analysis/analysis_registry.h"
#include "analysis/analysis_result.h"
#include "analysis/heads.h"
#include "analysis/heatmap_pooling.h"
#include "analysis/frequency_export.h"
#include "analysis/position_export.h"
#include "analysis/u_shape.h"
#include "app/gui/jobs/analysis_view_builders.h"
#include "app/gui/jobs/frequency_summaries.h"
#include "core/base/error.h"
#include "core/formats/captures_reader.h"
#include "core/base/untrusted_json.h"

namespace poslens::gui {
namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

/// A probe read from a file as the views draw it: vaf_per_head, where the file has none (a
/// comparison's head means), is the layer's VAF as one "head".
ProbeResult for_views(ProbeResult p) {
  if (!p.vaf_per_head.defined()) p.vaf_per_head = p.vaf.unsqueeze(1);
  return p;
}

/// The model's layer and head counts from a file's root `model_config`, or {0, 0}.
std::pair<int, int> model_shape(const Hdf5Reader& file) {
  const auto text = file.string_attribute("/", "model_config");
  try {
    const auto j = parse_untrusted_json(text.data(), text.data() + text.size(), file.path(), "model_config");
    return {j.value("n_layers", 0), j.value("n_heads", 0)};
  } catch (const Error&) {
    return {0, 0};
  }
}

AnalysisView usage_file(const Hdf5Reader& file, const std::string& name) {
  return usage_view(read_frequency_usage_hdf5(file), 0, name);
}

AnalysisView massive_file(const Hdf5Reader& file, const std::string& name) {
  return massive_view(read_massive_activations_hdf5(file), read_token_labels(file), name);
}

AnalysisView divergence_file(const Hdf5Reader& file, const std::string& name) {
  const auto d = read_divergence_hdf5(file);
  return divergence_view(d.divergence, read_token_labels(file), name + " vs " + stem(d.second_checkpoint));
}

AnalysisView length_file(const Hdf5Reader& file, const std::string& name) {
  const auto f = read_length_loss_hdf5(file);
  return length_view(f.curves, f.L, name);
}

AnalysisView u_shape_file(const Hdf5Reader& file, const std::string&) { return u_shape_view(read_u_shape_hdf5(file)); }

AnalysisView offset_file(const Hdf5Reader& file, const std::string& name) {
  return offset_view(read_position_offset_hdf5(file), read_token_labels(file), name, "opened from a file");
}

AnalysisView heinsen_file(const Hdf5Reader& file, const std::string& name) {
  return heinsen_view(read_heinsen_states_hdf5(file), read_token_labels(file), name);
}

AnalysisView heads_file(const Hdf5Reader& file, const std::string& name) {
  const auto m = read_head_metrics_hdf5(file);
  return heads_view(m.values, head_metric_names(), name);
}

/// The Analyses panel's reader of each analysis it shows from a file (ShownIn::Analyses), by
/// registry name (plain analyses need none: their entry's `read`);
/// AnalysesWindow.TheChooserAndTheFileReadersAreTheRegistrys checks none is missing.
struct PanelReader {
  const char* analysis;
  AnalysisView (*read)(const Hdf5Reader& file, const std::string& name);
};

constexpr PanelReader kPanelReaders[] = {
    {"frequency-usage", usage_file}, {"massive-activations", massive_file}, {"divergence", divergence_file},
    {"length-loss", length_file},    {"u-shape", u_shape_file},             {"position-offset", offset_file},
    {"heinsen-states", heinsen_file}, {"heads", heads_file},
};

const PanelReader* panel_reader(const std::string& analysis) {
  for (const auto& reader : kPanelReaders)
    if (analysis == reader.analysis) return &reader;
  return nullptr;
}

}  // namespace

FrequencySummary decomposition_file(const Hdf5Reader& file, const QString& path) {
  const auto d = read_frequencies_hdf5(file);
  auto [n_layers, n_heads] = model_shape(file);
  n_layers = std::max(n_layers, d.layer + 1);
  n_heads = std::max<int>(n_heads, d.head >= 0 ? d.head + 1 : static_cast<int>(d.components.size(0)));
  auto summary = decomposition_summary(d, n_layers, n_heads, QFileInfo(path).fileName().toStdString());
  summary.note = QObject::tr("layer %1 decomposed on the input, opened from %2").arg(d.layer).arg(path);
  return summary;
}

PositionView position_file(const Hdf5Reader& file) {
  const auto h = read_position_map_hdf5(file);
  const auto labels = read_token_labels(file);
  const auto labelled = [&](HeatmapData d) {
    if (static_cast<int64_t>(labels.size()) == h.source_length)
      for (const auto& l : labels) d.row_labels.push_back(display_label(l));
    d.layer = h.layer;
    d.head = h.head;
    return d;
  };
  const auto view_of = [&](const at::Tensor& map, const std::string& what) {
    auto d = labelled(heatmap_from_pooled(map, h.source_length, h.source_length));
    d.col_labels = d.row_labels;
    d.title = "layer " + std::to_string(h.layer) + ", head " + std::to_string(h.head) + " — " + what;
    d.value_name = "weight / row max";
    d.kind = HeatmapKind::Probability;
    return d;
  };
  PositionView view;
  view.layer = h.layer;
  view.head = h.head;
  view.pattern = view_of(h.pattern, "pattern");
  view.position = view_of(h.position, "position only");
  if (h.sink_share.defined())  // a learned sink's share of each row: the column beside the pattern
    view.sink = labelled(sink_share_heatmap(h.sink_share, h.source_length));
  view.method = q(h.method);
  view.explanation = q(h.explanation) +
                     QObject::tr(" (opened from %1; %2 heads written)").arg(q(file.path())).arg(h.heads.size());
  return view;
}

AnalysisView captures_view(const Hdf5Reader& file, int layer, int head) {
  AnalysisView v;
  v.kind = QStringLiteral("captures");
  v.table_header = {QObject::tr("hook"), QObject::tr("shape")};
  v.csv = "hook,shape\n";
  for (const auto& hook : read_captured_hooks(file)) {
    std::string shape;
    for (const auto d : hook.shape) shape += (shape.empty() ? "" : "×") + std::to_string(d);
    v.table_rows.push_back({q(hook.name), q(shape)});
    v.csv += hook.name + "," + shape + "\n";
  }
  const auto labels = read_token_labels(file);
  const auto map_of = [&](const std::string& hook, HeatmapKind kind, const std::string& what) {
    const auto map = read_captured_head_map(file, layer, hook, head);
    if (!map) return HeatmapData{};
    const int64_t T = map->source_length;
    auto d = heatmap_from_pooled(map->values, T, T);
    if (static_cast<int64_t>(labels.size()) >= T)
      for (int64_t i = 0; i < T; ++i) d.row_labels.push_back(display_label(labels[static_cast<size_t>(i)]));
    d.col_labels = d.row_labels;
    d.title = "layer " + std::to_string(layer) + ", stored head " + std::to_string(head) + " — " + what;
    d.value_name = what;
    d.kind = kind;
    d.layer = layer;
    d.head = head;
    return d;
  };
  v.left = map_of("hook_pattern", HeatmapKind::Probability, "pattern");
  v.right = map_of("hook_attn_scores", HeatmapKind::Logit, "scores");
  v.title = QObject::tr("Captures of %1").arg(q(file.string_attribute("/", "checkpoint")));
  v.summary = v.left.values.empty()
                  ? QObject::tr("%1 hooks captured; layer %2 has no hook_pattern of head %3 (choose another "
                                "layer or head)")
                        .arg(v.table_rows.size())
                        .arg(layer)
                        .arg(head)
                  : QObject::tr("%1 hooks captured; layer %2, stored head %3 shown (layer and head choose)")
                        .arg(v.table_rows.size())
                        .arg(layer)
                        .arg(head);
  if (v.right.values.empty()) v.right = v.left;  // pattern only: drawn once more on the right
  v.file_stem = QStringLiteral("captures");
  return v;
}

SeriesSummary frequency_file(const Hdf5Reader& file, const QString& path) {
  SeriesSummary s;
  if (file.exists(kFrequenciesGroup)) {
    s.last = decomposition_file(file, path);
  } else if (file.exists(kProbeGroup)) {
    s.last = probe_summary(for_views(read_probe_hdf5(file)), QFileInfo(path).fileName().toStdString());
    s.last.note = QObject::tr("opened from %1").arg(path);
  } else {
    auto r = read_compare_hdf5(file);
    for (auto& p : r.probes) p = for_views(std::move(p));
    s = series_summary(r, path);
    s.last.note = QObject::tr("%1 checkpoints opened from %2 (head means)").arg(r.probes.size()).arg(path);
  }
  return s;
}

bool analyses_panel_reads(const std::string& analysis) {
  return panel_reader(analysis) != nullptr || analysis_entry(analysis).read != nullptr;
}

AnalysisView analysis_panel_file(const Hdf5Reader& file, const std::string& name) {
  const auto* entry = analysis_in_file(file);
  if (entry && entry->shown_in == ShownIn::Analyses && entry->read) return result_view(entry->name, entry->read(file));
  const auto* reader = entry && entry->shown_in == ShownIn::Analyses ? panel_reader(entry->name) : nullptr;
  if (!reader)
    throw Error(file.path() + ": holds none of the analyses this panel shows (" +
                analysis_names([](const AnalysisEntry& e) { return e.shown_in == ShownIn::Analyses; }) +
                ") and no probe or comparison (Frequencies panel)");
  return reader->read(file, name);
}

}  // namespace poslens::gui
