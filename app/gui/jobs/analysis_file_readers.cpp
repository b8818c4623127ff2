// The views of the files the CLI wrote (see analysis_file_readers.h).
#include "app/gui/worker_context.h"

#include "app/gui/jobs/analysis_file_readers.h"

#include <QFileInfo>
#include <QObject>

#include <algorithm>
#include <cstdio>

#include "analysis/analysis_files.h"
#include "analysis/analysis_registry.h"
#include "analysis/analysis_result.h"
#include "analysis/head_metrics.h"
#include "analysis/heatmap_pooling.h"
#include "analysis/position_export.h"
#include "analysis/u_shape.h"
#include "app/gui/jobs/analysis_view_builders.h"
#include "app/gui/jobs/frequency_summaries.h"
#include "core/base/error.h"
#include "core/base/untrusted_json.h"

namespace poslens::gui {
namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

/// A probe group of a file (`/analysis/probe` or one checkpoint of `/analysis/compare`) as the
/// ProbeResult the views draw. `scores` [layer, head, key] and `components` [layer, head,
/// component, key]; the group's attributes give T, the sample count, L and HoPE's cut.
ProbeResult probe_from(const Hdf5Reader& file, const std::string& group, at::Tensor scores, at::Tensor components,
                       at::Tensor vaf, at::Tensor vaf_per_head) {
  ProbeResult p;
  p.scores = scores.to(torch::kFloat32);
  p.components = components.to(torch::kFloat32);
  p.vaf = vaf.to(torch::kFloat32);
  p.vaf_per_head = vaf_per_head.defined() ? vaf_per_head.to(torch::kFloat32) : p.vaf.unsqueeze(1);
  p.theta = file.read(group + "/theta");
  p.activated = file.read(group + "/activated").to(torch::kBool);
  p.T = file.int_attribute(group, "T", p.scores.size(-1));
  p.n_samples = file.int_attribute(group, "n_samples");
  p.L = file.int_attribute(group, "L");
  p.kept_components = file.int_attribute(group, "kept_components", p.theta.size(0));
  p.pairing = file.string_attribute(group, "pairing");
  const auto C = p.theta.size(0);
  if (p.scores.dim() != 3 || p.components.dim() != 4 || p.components.size(2) != C || p.vaf.dim() != 2 ||
      p.vaf.size(1) != C || p.components.size(0) != p.scores.size(0) || p.components.size(1) != p.scores.size(1) ||
      p.components.size(3) != p.scores.size(2) || p.activated.size(0) != C)
    throw Error(file.path() + ": " + group + " datasets of inconsistent shapes");
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
  const std::string g = kFrequenciesGroup;
  TextDecomposition d;
  d.layer = static_cast<int>(file.int_attribute(g, "layer"));
  d.head = static_cast<int>(file.int_attribute(g, "head", -1));
  d.L = file.int_attribute(g, "L");
  d.pairing = file.string_attribute(g, "pairing");
  d.components = file.read(g + "/components").to(torch::kFloat32);
  d.scores = file.read(g + "/scores").to(torch::kFloat32);
  if (file.exists(g + "/remainder")) d.remainder = file.read(g + "/remainder").to(torch::kFloat32);
  if (file.exists(g + "/position_terms")) d.position_terms = file.read(g + "/position_terms").to(torch::kFloat32);
  d.theta = file.read(g + "/theta");
  d.activated = file.read(g + "/activated").to(torch::kBool);
  d.kept_components = file.int_attribute(g, "kept_components", d.theta.size(0));
  if (file.exists("/tokens/text")) d.labels = file.read_strings("/tokens/text");
  const auto& c = d.components;
  if (c.dim() != 4 || d.scores.dim() != 3 || c.size(0) != d.scores.size(0) || c.size(1) != d.theta.size(0) ||
      c.size(2) != d.scores.size(1) || c.size(3) != d.scores.size(2) || d.layer < 0 ||
      (!d.labels.empty() && static_cast<int64_t>(d.labels.size()) != c.size(3)))
    throw Error(file.path() + ": frequencies datasets of inconsistent shapes");
  auto [n_layers, n_heads] = model_shape(file);
  n_layers = std::max(n_layers, d.layer + 1);
  n_heads = std::max<int>(n_heads, d.head >= 0 ? d.head + 1 : static_cast<int>(c.size(0)));
  auto summary = decomposition_summary(d, n_layers, n_heads, QFileInfo(path).fileName().toStdString());
  summary.note = QObject::tr("layer %1 decomposed on the input, opened from %2").arg(d.layer).arg(path);
  return summary;
}

PositionView position_file(const Hdf5Reader& file) {
  const std::string map = kPositionMapGroup, pattern = "/analysis/pattern";
  if (!file.exists(pattern)) throw Error(file.path() + ": a position map without its /analysis/pattern");
  const auto shape = file.shape(map);
  if (shape.size() != 4 || file.shape(pattern) != shape)
    throw Error(file.path() + ": position_map and pattern must be [layer, head, q, k] of one shape");
  // The heads written ("L.H"); the first one is shown.
  int layer = 0, head = 0;
  const auto heads = file.string_list_attribute(map, "heads");
  if (!heads.empty() && std::sscanf(heads.front().c_str(), "%d.%d", &layer, &head) != 2) layer = head = 0;
  if (layer < 0 || layer >= shape[0] || head < 0 || head >= shape[1])
    throw Error(file.path() + ": its heads attribute names a head outside the maps");
  const int64_t T = file.int_attribute(map, "source_length", shape[2]);
  const auto labels = file.exists("/tokens/text") ? file.read_strings("/tokens/text") : std::vector<std::string>{};
  const auto view_of = [&](const std::string& dataset, const std::string& what) {
    auto d = heatmap_from_pooled(file.read_slice(dataset, {layer, head}).to(torch::kFloat32), T, T);
    if (static_cast<int64_t>(labels.size()) == T)
      for (const auto& l : labels) d.row_labels.push_back(display_label(l));
    d.col_labels = d.row_labels;
    d.title = "layer " + std::to_string(layer) + ", head " + std::to_string(head) + " — " + what;
    d.value_name = "weight / row max";
    d.kind = HeatmapKind::Probability;
    d.layer = layer;
    d.head = head;
    return d;
  };
  PositionView view;
  view.layer = layer;
  view.head = head;
  view.pattern = view_of(pattern, "pattern");
  view.position = view_of(map, "position only");
  const auto methods = file.string_list_attribute(map, "methods");
  view.method = q(static_cast<size_t>(layer) < methods.size() ? methods[static_cast<size_t>(layer)] : "");
  view.explanation = q(file.string_attribute(map, "explanation")) +
                     QObject::tr(" (opened from %1; %2 heads written)").arg(q(file.path())).arg(heads.size());
  return view;
}

AnalysisView captures_view(const Hdf5Reader& file, int layer, int head) {
  AnalysisView v;
  v.kind = QStringLiteral("captures");
  v.table_header = {QObject::tr("hook"), QObject::tr("shape")};
  v.csv = "hook,shape\n";
  for (const auto& name : file.children("/captures")) {
    std::string shape;
    for (const auto d : file.shape("/captures/" + name)) shape += (shape.empty() ? "" : "×") + std::to_string(d);
    v.table_rows.push_back({q(name), q(shape)});
    v.csv += name + "," + shape + "\n";
  }
  const auto labels = file.exists("/tokens/text") ? file.read_strings("/tokens/text") : std::vector<std::string>{};
  const auto map_of = [&](const std::string& hook, HeatmapKind kind, const std::string& what) {
    const std::string path = "/captures/blocks." + std::to_string(layer) + ".attn." + hook;
    if (!file.exists(path)) return HeatmapData{};
    const auto shape = file.shape(path);
    if (shape.size() != 4 || head < 0 || head >= shape[1]) return HeatmapData{};
    const int64_t T = file.int_attribute(path, "source_length", shape[2]);
    auto d = heatmap_from_pooled(file.read_slice(path, {0, head}).to(torch::kFloat32), T, T);
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
  if (file.exists(kFrequenciesGroup)) {
    SeriesSummary s;
    s.last = decomposition_file(file, path);
    return s;
  }
  if (file.exists(kProbeGroup)) {
    const std::string g = kProbeGroup;
    const auto p = probe_from(file, g, file.read(g + "/scores"), file.read(g + "/components"), file.read(g + "/vaf"),
                              file.exists(g + "/vaf_per_head") ? file.read(g + "/vaf_per_head") : at::Tensor());
    SeriesSummary s;
    s.last = probe_summary(p, QFileInfo(path).fileName().toStdString());
    s.last.note = QObject::tr("opened from %1").arg(path);
    return s;
  }
  const std::string g = kCompareGroup;
  CompareResult r;
  r.names = file.read_strings(g + "/checkpoints");
  r.steps = [&] {
    const auto steps = file.read(g + "/steps").contiguous();
    return std::vector<int64_t>(steps.data_ptr<int64_t>(), steps.data_ptr<int64_t>() + steps.numel());
  }();
  r.vaf = file.read(g + "/vaf").to(torch::kFloat32);
  const auto scores = file.read(g + "/scores"), components = file.read(g + "/components");
  const auto n = static_cast<int64_t>(r.names.size());
  if (n < 1 || r.vaf.dim() != 3 || r.vaf.size(0) != n || scores.dim() != 4 || scores.size(0) != n ||
      components.dim() != 4 || components.size(0) != n || static_cast<int64_t>(r.steps.size()) != n)
    throw Error(file.path() + ": compare datasets of inconsistent shapes");
  // The file keeps head means of the components: every checkpoint becomes a one-"head" probe.
  for (int64_t i = 0; i < n; ++i)
    r.probes.push_back(probe_from(file, g, scores[i].mean(1, true), components[i].unsqueeze(1), r.vaf[i], {}));
  auto s = series_summary(r, path);
  s.last.note = QObject::tr("%1 checkpoints opened from %2 (head means)").arg(n).arg(path);
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
