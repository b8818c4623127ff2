// The Analyses panel's jobs: frequency usage, massive activations and pattern divergence run
// on the open model (analysis/ modules, streamed), and the same views made from an HDF5 file the
// CLI wrote, without a model (File ▸ Open analysis…).
#include "app/gui/worker_context.h"

#include "app/gui/jobs/frequency_summaries.h"
#include "app/gui/jobs/jobs.h"

#include <QDateTime>
#include <QFileInfo>

#include <cmath>
#include <cstdio>
#include <mutex>
#include <set>
#include <tuple>

#include "analysis/analysis_files.h"
#include "analysis/analysis_views.h"
#include "analysis/head_metrics.h"
#include "analysis/heatmap_pooling.h"
#include "analysis/length_generalisation.h"
#include "analysis/rope_probe.h"
#include "analysis/checkpoint_series.h"
#include "analysis/u_shape.h"
#include "core/base/untrusted_json.h"
#include "core/base/error.h"
#include "core/formats/hdf5_check.h"
#include "core/formats/hdf5_reader.h"

namespace poslens::gui {
namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

QString provenance(const std::string& checkpoint, const std::string& sha256, const QString& file = {}) {
  QString text = QObject::tr("checkpoint %1 · weights SHA-256 %2")
                     .arg(q(checkpoint), sha256.empty() ? QObject::tr("unknown") : q(sha256));
  if (!file.isEmpty()) text += QObject::tr(" · opened from %1").arg(file);
  return text;
}

std::string stem(const std::string& checkpoint) {
  return QFileInfo(q(checkpoint)).fileName().toStdString();
}

AnalysisView usage_view(const FrequencyUsage& u, int layer, const std::string& name) {
  AnalysisView v;
  v.kind = QStringLiteral("frequency-usage");
  layer = std::clamp<int>(layer, 0, static_cast<int>(u.q_norm.size(0)) - 1);
  std::tie(v.left, v.right) = frequency_usage_maps(u, layer, name);
  v.title = QObject::tr("Frequency usage of %1, layer %2").arg(q(name)).arg(layer);
  const auto mean = u.q_layer_mean()[layer];
  const int64_t top = mean.argmax().item<int64_t>();
  v.summary = QObject::tr("Layer %1's queries are largest on component %2 (θ = %3 rad/position, "
                          "%4 vs median %5): high θ on the left, the semantic low frequencies on the right.")
                  .arg(layer)
                  .arg(top)
                  .arg(u.rotary.theta[top].item<double>(), 0, 'g', 3)
                  .arg(mean[top].item<double>(), 0, 'g', 3)
                  .arg(mean.median().item<double>(), 0, 'g', 3);
  v.csv = frequency_usage_csv(u);
  v.file_stem = QStringLiteral("frequency-usage-%1").arg(q(name));
  return v;
}

AnalysisView massive_view(const MassiveActivations& m, const std::vector<std::string>& labels,
                          const std::string& name) {
  AnalysisView v;
  v.kind = QStringLiteral("massive-activations");
  v.title = QObject::tr("Massive activations of %1").arg(q(name));
  v.table_header = {QObject::tr("layer"), QObject::tr("top |h|"), QObject::tr("median |h|"), QObject::tr("ratio"),
                    QObject::tr("position"), QObject::tr("token"), QObject::tr("dim"), QObject::tr("massive")};
  int64_t massive_layers = 0;
  for (int64_t l = 0; l < m.top_values.size(0); ++l) {
    const double top = std::abs(m.top_values[l][0].item<double>()), median = m.median[l].item<double>();
    const int64_t pos = m.top_positions[l][0].item<int64_t>();
    const bool massive = m.massive[l][0].item<bool>();
    massive_layers += massive ? 1 : 0;
    v.table_rows.push_back({QString::number(l), QString::number(top, 'g', 4), QString::number(median, 'g', 4),
                            median > 0 ? QString::number(top / median, 'g', 4) : QString(),
                            QString::number(pos),
                            pos >= 0 && pos < static_cast<int64_t>(labels.size())
                                ? q(display_label(labels[static_cast<size_t>(pos)]))
                                : QString(),
                            QString::number(m.top_dims[l][0].item<int64_t>()),
                            massive ? QObject::tr("yes") : QString()});
  }
  v.summary = QObject::tr("%1 of %2 layers have a massive activation (|h| > 100 and > 1000× the median; "
                          "Sun et al. 2024).")
                  .arg(massive_layers)
                  .arg(m.top_values.size(0));
  v.curves = massive_curves(m, name + "  largest |h| per layer");
  v.csv = massive_activations_csv(m, labels);
  v.file_stem = QStringLiteral("massive-activations-%1").arg(q(name));
  return v;
}

AnalysisView divergence_view(const PatternDivergence& d, const std::vector<std::string>& labels,
                             const std::string& title) {
  AnalysisView v;
  v.kind = QStringLiteral("divergence");
  std::tie(v.left, v.right) = divergence_maps(d, labels, title);
  v.title = QObject::tr("Attention divergence, %1").arg(q(title));
  const auto flat = d.per_head.flatten();
  const int64_t top = flat.argmax().item<int64_t>(), H = d.per_head.size(1);
  v.summary = QObject::tr("Mean JS %1 nats (0 … ln 2 = 0.693); the most changed head is L%2 H%3 (%4).")
                  .arg(flat.mean().item<double>(), 0, 'g', 3)
                  .arg(top / H)
                  .arg(top % H)
                  .arg(flat[top].item<double>(), 0, 'g', 3);
  v.csv = divergence_csv(d);
  v.file_stem = QStringLiteral("divergence");
  return v;
}

/// The head metrics of a `heads` file as a table: one row per head, one column per metric.
AnalysisView heads_view(const at::Tensor& values, const std::vector<std::string>& names, const std::string& name) {
  AnalysisView v;
  v.kind = QStringLiteral("heads");
  v.title = QObject::tr("Head metrics of %1").arg(q(name));
  v.table_header = {QObject::tr("layer"), QObject::tr("head")};
  for (const auto& n : names) v.table_header << q(n);
  for (int64_t l = 0; l < values.size(0); ++l)
    for (int64_t h = 0; h < values.size(1); ++h) {
      QStringList row = {QString::number(l), QString::number(h)};
      for (int64_t m = 0; m < values.size(2); ++m) {
        const double x = values[l][h][m].item<double>();
        row << (std::isnan(x) ? QString() : QString::number(x, 'g', 4));
      }
      v.table_rows.push_back(row);
    }
  // The CLI's CSV (`heads --out x.csv`), byte for byte.
  const auto flat = values.contiguous();
  v.csv = head_metrics_csv(values.size(0), values.size(1),
                           std::vector<double>(flat.data_ptr<double>(), flat.data_ptr<double>() + flat.numel()));
  v.summary = QObject::tr("%1 layers × %2 heads, %3 metrics (analysis/head_metrics.h has each formula).")
                  .arg(values.size(0))
                  .arg(values.size(1))
                  .arg(values.size(2));
  v.file_stem = QStringLiteral("heads-%1").arg(q(name));
  return v;
}

AnalysisView length_view(const std::vector<LossCurve>& curves, int64_t L, const std::string& name) {
  AnalysisView v;
  v.kind = QStringLiteral("length-loss");
  const int64_t T = curves.empty() ? 0 : curves[0].loss.size(0) + 1;
  v.title = QObject::tr("Loss per position of %1, T = %2").arg(q(name)).arg(T);
  v.curves = length_loss_curves(curves, L, name + "  loss per position, T = " + std::to_string(T));
  QStringList parts;
  for (const auto& c : curves) {
    const int64_t inside = std::min<int64_t>(L > 0 ? L : T - 1, c.loss.size(0));
    const double in = c.loss.narrow(0, 0, inside).mean().item<double>();
    const double beyond = inside < c.loss.size(0) ? c.loss.narrow(0, inside, c.loss.size(0) - inside).mean().item<double>() : NAN;
    parts << QObject::tr("%1: %2 nats within L, %3 beyond").arg(q(c.name)).arg(in, 0, 'f', 3).arg(beyond, 0, 'f', 3);
  }
  v.summary = parts.join(QStringLiteral("; "));
  v.csv = length_loss_csv(curves);
  v.file_stem = QStringLiteral("length-loss-%1").arg(q(name));
  return v;
}

AnalysisView u_shape_view(const UShapes& u) {
  AnalysisView v;
  v.kind = QStringLiteral("u-shape");
  v.title = QObject::tr("U-shape probe of %1 models, T = %2").arg(u.checkpoints.size()).arg(u.T);
  v.curves = u_shape_curves(u, -1, "U-shape probe, T = " + std::to_string(u.T) + ", " + std::to_string(u.n_samples) +
                                       " tokens per model (seed 003 Fig. 1)");
  const auto minimum = u_shape_minimum_position(u);
  QStringList parts;
  for (size_t m = 0; m < u.checkpoints.size(); ++m) {
    QStringList layers;
    for (int64_t l = 0; l < minimum.size(1); ++l)
      layers << QObject::tr("L%1 %2").arg(l).arg(minimum[static_cast<int64_t>(m)][l].item<double>(), 0, 'f', 2);
    parts << QObject::tr("%1 (%2): lowest at %3").arg(q(checkpoint_label(u.checkpoints[m])), q(u.encodings[m]), layers.join(' '));
  }
  v.summary = QObject::tr("Where each curve is lowest, 0 = key 1 (a global decay) … 1 = the query's neighbour: ") +
              parts.join(QStringLiteral("; "));
  v.csv = u_shape_csv(u);
  v.file_stem = QStringLiteral("u-shape");
  return v;
}

AnalysisView offset_view(const OffsetEffect& e, const std::vector<std::string>& labels, const std::string& name,
                         const std::string& method) {
  AnalysisView v;
  v.kind = QStringLiteral("position-offset");
  std::tie(v.left, v.right) = offset_maps(e, static_cast<int64_t>(labels.size()), name);
  for (auto* map : {&v.left, &v.right}) {  // labels are per source position, pooled or not
    if (static_cast<int64_t>(labels.size()) != map->source_rows) continue;
    for (const auto& l : labels) map->row_labels.push_back(display_label(l));
    map->col_labels = map->row_labels;
  }
  v.title = QObject::tr("Position offset Δ = %1 on %2").arg(e.offset).arg(q(name));
  const auto flat = e.divergence.per_head.flatten();
  v.summary = QObject::tr("JS between the patterns at 0 and Δ: mean %1, max %2 nats (%3; ≈ 0 means the "
                          "model attends by relative position only).")
                  .arg(flat.mean().item<double>(), 0, 'g', 3)
                  .arg(flat.max().item<double>(), 0, 'g', 3)
                  .arg(q(method));
  v.csv = divergence_csv(e.divergence);
  v.file_stem = QStringLiteral("position-offset-%1").arg(e.offset);
  return v;
}

AnalysisView heinsen_view(const HeinsenStates& s, const std::vector<std::string>& labels, const std::string& name) {
  AnalysisView v;
  v.kind = QStringLiteral("heinsen-states");
  auto maps = heinsen_maps(s, labels, name);
  v.left = maps[0];
  v.right = maps[1];
  v.third = maps[2];
  v.title = QObject::tr("Heinsen's position states of %1").arg(q(name));
  const auto keep = s.decay.mean(0);
  v.summary = QObject::tr("%1 features over %2 positions; mean decay p per feature from %3 to %4 "
                          "(near 1: the state carries far back; near 0: it resets at each token).")
                  .arg(s.state.size(1))
                  .arg(s.state.size(0))
                  .arg(keep.min().item<double>(), 0, 'g', 3)
                  .arg(keep.max().item<double>(), 0, 'g', 3);
  v.csv = heinsen_states_csv(s, labels);
  v.file_stem = QStringLiteral("heinsen-states-%1").arg(q(name));
  return v;
}

/// `v` with the open model's checkpoint and weights digest under it.
AnalysisView of_model(AnalysisView v, const LoadedModel& loaded) {
  v.provenance = provenance(loaded.path, loaded.weights_sha256);
  return v;
}

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

/// A `frequencies` file (one layer's scores on the input split by rotary component) as the
/// Frequencies panel's curves.
FrequencySummary decomposition_file(const Hdf5Reader& file, const QString& path) {
  const std::string g = "/analysis/frequencies";
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

/// A `position-map` file: the first written head's pattern and position-only map (pooled as
/// written), read one head at a time.
PositionView position_file(const Hdf5Reader& file) {
  const std::string map = "/analysis/position_map", pattern = "/analysis/pattern";
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

/// A run's capture file: the captured hooks as a table and one head's maps, read alone.
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

/// A probe file (`probe`) or a series (`compare`, a merged sweep of probes) for the Frequencies
/// panel: a SeriesSummary, its per_layer empty for a single probe.
SeriesSummary frequency_file(const Hdf5Reader& file, const QString& path) {
  if (file.exists("/analysis/probe")) {
    const std::string g = "/analysis/probe";
    const auto p = probe_from(file, g, file.read(g + "/scores"), file.read(g + "/components"), file.read(g + "/vaf"),
                              file.exists(g + "/vaf_per_head") ? file.read(g + "/vaf_per_head") : at::Tensor());
    SeriesSummary s;
    s.last = probe_summary(p, QFileInfo(path).fileName().toStdString());
    s.last.note = QObject::tr("opened from %1").arg(path);
    return s;
  }
  const std::string g = "/analysis/compare";
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

/// Reads the file in a child process first (check_hdf5_in_child: libhdf5 can crash or hang on
/// a hostile file), once per path, size and modification time: changing a captures view's
/// layer or head re-reads a file already checked.
void check_in_child_once(const QString& path, const WorkerContext& ctx) {
  static std::mutex mutex;
  static std::set<std::tuple<QString, qint64, qint64>> passed;
  const QFileInfo info(path);
  const auto key = std::make_tuple(info.absoluteFilePath(), info.size(), info.lastModified().toMSecsSinceEpoch());
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (passed.count(key)) return;
  }
  check_hdf5_in_child(path.toStdString(), 60, [&ctx] { return ctx.cancelled(); });
  const std::lock_guard<std::mutex> lock(mutex);
  passed.insert(key);
}

/// The input's labels of a file: /tokens/text, one per position of the first sequence.
std::vector<std::string> file_labels(const Hdf5Reader& file) {
  return file.exists("/tokens/text") ? file.read_strings("/tokens/text") : std::vector<std::string>{};
}

}  // namespace

Work frequency_usage_job(const RunInput& input, int layer) {
  return [input, layer](WorkerContext& ctx) -> std::any {
    const auto& loaded = ctx.model();
    const auto u = compute_frequency_usage(loaded, input_ids(loaded, input), ctx.progress());
    return of_model(usage_view(u, layer, stem(loaded.path)), loaded);
  };
}

Work massive_activations_job(const RunInput& input) {
  return [input](WorkerContext& ctx) -> std::any {
    const auto& loaded = ctx.model();
    const auto ids = input_ids(loaded, input);
    const auto m = compute_massive_activations(loaded, ids, 10, ctx.progress());
    return of_model(massive_view(m, token_labels(loaded, ids), stem(loaded.path)), loaded);
  };
}

Work divergence_job(const RunInput& input, const QString& checkpoint) {
  return [input, checkpoint](WorkerContext& ctx) -> std::any {
    const auto& first = ctx.model();
    LoadOptions options;
    options.device = first.model->device().str();
    const auto second = load_checkpoint(checkpoint.toStdString(), options);
    const auto ids = input_ids(first, input);
    const auto d = compute_pattern_divergence(first, second, ids, ctx.progress());
    auto v = divergence_view(d, token_labels(first, ids), stem(first.path) + " vs " + stem(second.path));
    v.provenance = provenance(first.path, first.weights_sha256) + QObject::tr(" | ") +
                   provenance(second.path, second.weights_sha256);
    return v;
  };
}

Work length_loss_job(const QString& text_file, const QStringList& scalings) {
  return [text_file, scalings](WorkerContext& ctx) -> std::any {
    const auto& loaded = ctx.model();
    if (!loaded.tokenizer) throw Error("the model has no tokenizer: " + loaded.tokenizer_note);
    const int64_t L = training_length(loaded.model->config());
    const auto ids = loaded.tokenizer->encode(read_small_file(text_file.toStdString(), 64u << 20), false);
    std::vector<LossCurve> curves;
    const auto n = static_cast<double>(scalings.size());
    for (int s = 0; s < scalings.size(); ++s) {
      const auto spec = scalings[s].toStdString();
      const auto part = ctx.progress().part(s / n, 1.0 / n);
      const auto scaled = spec == "none" ? nullptr : with_rope_scaling(*loaded.model, rope_scaling_json(spec, L));
      auto curve = per_position_loss(scaled ? *scaled : *loaded.model, ids, 4 * L, 8,
                                     loaded.model->config().bos_token_id, part);
      curve.name = spec;
      curves.push_back(std::move(curve));
    }
    auto v = length_view(curves, L, stem(loaded.path));
    v.provenance = provenance(loaded.path, loaded.weights_sha256) + QObject::tr(" · text %1").arg(text_file);
    return v;
  };
}

Work position_offset_job(const RunInput& input, int64_t offset, int layer, int head) {
  return [input, offset, layer, head](WorkerContext& ctx) -> std::any {
    const auto& loaded = ctx.model();
    const auto ids = input_ids(loaded, input);
    const auto e = position_offset_effect(loaded, ids, offset, layer, head, 512, ctx.progress());
    return of_model(offset_view(e, token_labels(loaded, ids), stem(loaded.path),
                                loaded.model->position_encoding().describe()),
                    loaded);
  };
}

Work heinsen_states_job(const RunInput& input) {
  return [input](WorkerContext& ctx) -> std::any {
    const auto& loaded = ctx.model();
    const auto ids = input_ids(loaded, input);
    return of_model(heinsen_view(compute_heinsen_states(loaded, ids), token_labels(loaded, ids), stem(loaded.path)),
                    loaded);
  };
}

Work open_analysis_job(const QString& path, int layer, int head) {
  return [path, layer, head](WorkerContext& ctx) -> std::any {
    check_in_child_once(path, ctx);
    const Hdf5Reader file(path.toStdString());
    const auto version = file.string_attribute("/", "poslens_version");
    if (version.empty())
      throw Error(path.toStdString() + ": not a PosLens analysis file (no poslens_version attribute)");
    if (version != POSLENS_VERSION)
      throw Error(path.toStdString() + ": written by PosLens " + version + "; this PosLens (" + POSLENS_VERSION +
                  ") reads the files of its own version");
    const auto checkpoint = file.string_attribute("/", "checkpoint");
    const auto name = stem(checkpoint);
    if (file.exists("/analysis/probe") || file.exists("/analysis/compare")) return frequency_file(file, path);
    if (file.exists("/analysis/frequencies")) {
      SeriesSummary s;
      s.last = decomposition_file(file, path);
      return s;
    }
    if (file.exists("/analysis/position_map")) return position_file(file);
    if (file.exists("/captures")) {
      auto v = captures_view(file, layer, head);
      v.provenance = provenance(file.string_attribute("/", "checkpoint"), file.string_attribute("/", "weights_sha256"), path);
      return v;
    }
    AnalysisView v;
    if (file.exists("/analysis/frequency_usage")) {
      FrequencyUsage u;
      const std::string g = "/analysis/frequency_usage/";
      u.q_norm = file.read(g + "q_norm");
      u.k_norm = file.read(g + "k_norm");
      u.rotary.theta = file.read(g + "theta");
      u.L = file.int_attribute("/analysis/frequency_usage", "L");
      if (u.q_norm.dim() != 3 || u.k_norm.dim() != 3 || u.rotary.theta.dim() != 1 ||
          u.q_norm.size(2) != u.rotary.theta.size(0) || u.k_norm.size(2) != u.q_norm.size(2) ||
          u.q_norm.size(0) < 1)
        throw Error(path.toStdString() + ": frequency_usage datasets of inconsistent shapes");
      v = usage_view(u, 0, name);
    } else if (file.exists("/analysis/massive_activations")) {
      const std::string g = "/analysis/massive_activations/";
      MassiveActivations m{file.read(g + "top_values"), file.read(g + "top_positions"), file.read(g + "top_dims"),
                           file.read(g + "median"), file.read(g + "massive").to(torch::kBool)};
      if (m.top_values.dim() != 2 || m.top_positions.sizes() != m.top_values.sizes() ||
          m.top_dims.sizes() != m.top_values.sizes() || m.massive.sizes() != m.top_values.sizes() ||
          m.median.dim() != 1 || m.median.size(0) != m.top_values.size(0) || m.top_values.size(1) < 1)
        throw Error(path.toStdString() + ": massive_activations datasets of inconsistent shapes");
      v = massive_view(m, file_labels(file), name);
    } else if (file.exists("/analysis/divergence")) {
      PatternDivergence d{file.read("/analysis/divergence/per_head"), file.read("/analysis/divergence/per_query")};
      if (d.per_head.dim() != 2 || d.per_query.dim() != 2 || d.per_head.size(0) != d.per_query.size(0) ||
          d.per_head.numel() == 0)
        throw Error(path.toStdString() + ": divergence datasets of inconsistent shapes");
      const auto second = file.string_attribute("/analysis/divergence", "second_checkpoint");
      v = divergence_view(d, file_labels(file), name + " vs " + stem(second));
    } else if (file.exists("/analysis/length_loss")) {
      const auto loss = file.read("/analysis/length_loss/loss");
      const auto names = file.read_strings("/analysis/length_loss/curves");
      const auto windows = file.read("/analysis/length_loss/windows");
      if (loss.dim() != 2 || loss.size(0) != static_cast<int64_t>(names.size()) || windows.numel() != loss.size(0))
        throw Error(path.toStdString() + ": length_loss datasets of inconsistent shapes");
      std::vector<LossCurve> curves;
      for (int64_t c = 0; c < loss.size(0); ++c)
        curves.push_back({names[static_cast<size_t>(c)], loss[c], windows[c].item<int64_t>()});
      v = length_view(curves, file.int_attribute("/analysis/length_loss", "L"), name);
    } else if (file.exists("/analysis/u_shape")) {
      UShapes u;
      const std::string g = "/analysis/u_shape";
      u.scores = file.read(g + "/scores");
      u.checkpoints = file.string_list_attribute(g, "checkpoints");
      u.encodings = file.string_list_attribute(g, "encodings");
      u.T = file.int_attribute(g, "T");
      u.n_samples = file.int_attribute(g, "n_samples");
      if (u.scores.dim() != 3 || u.scores.size(0) != static_cast<int64_t>(u.checkpoints.size()) ||
          u.encodings.size() != u.checkpoints.size() || u.scores.size(2) != u.T || u.T < 3 || u.scores.size(1) < 1)
        throw Error(path.toStdString() + ": u_shape datasets of inconsistent shapes");
      v = u_shape_view(u);
    } else if (file.exists("/analysis/position_offset")) {
      const std::string g = "/analysis/position_offset";
      OffsetEffect e;
      e.divergence = {file.read(g + "/per_head"), file.read(g + "/per_query")};
      e.pattern = file.read(g + "/pattern").to(torch::kFloat32);
      e.shifted = file.read(g + "/shifted").to(torch::kFloat32);
      e.offset = file.int_attribute(g, "offset");
      e.layer = static_cast<int>(file.int_attribute(g, "layer"));
      e.head = static_cast<int>(file.int_attribute(g, "head"));
      if (e.divergence.per_head.dim() != 2 || e.pattern.dim() != 2 || e.shifted.sizes() != e.pattern.sizes() ||
          e.divergence.per_query.dim() != 2)
        throw Error(path.toStdString() + ": position_offset datasets of inconsistent shapes");
      v = offset_view(e, file_labels(file), name, "opened from a file");
    } else if (file.exists("/analysis/heinsen")) {
      HeinsenStates s{file.read("/analysis/heinsen/state"), file.read("/analysis/heinsen/decay"),
                      file.read("/analysis/heinsen/logits")};
      if (s.state.dim() != 2 || s.decay.sizes() != s.state.sizes() || s.logits.sizes() != s.state.sizes())
        throw Error(path.toStdString() + ": heinsen datasets of inconsistent shapes");
      v = heinsen_view(s, file_labels(file), name);
    } else if (file.exists("/analysis/heads/values")) {
      const auto values = file.read("/analysis/heads/values");
      const auto names = file.read_strings("/analysis/heads/metrics");
      if (values.dim() != 3 || values.size(2) != static_cast<int64_t>(names.size()) || names != head_metric_names())
        throw Error(path.toStdString() + ": its head metrics are not this version's (" +
                    std::to_string(names.size()) + " metrics)");
      v = heads_view(values.to(torch::kDouble), names, name);
    } else {
      throw Error(path.toStdString() +
                  ": holds none of the analyses this panel shows (heads, massive-activations, "
                  "frequency-usage, divergence, length-loss, position-offset, heinsen-states) and no "
                  "probe or comparison (Frequencies panel)");
    }
    v.provenance = provenance(checkpoint, file.string_attribute("/", "weights_sha256"), path);
    return v;
  };
}

}  // namespace poslens::gui
