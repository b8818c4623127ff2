// The Analyses panel's views from the analysis results (see analysis_view_builders.h).
#include "app/gui/worker_context.h"

#include "app/gui/jobs/analysis_view_builders.h"

#include <QFileInfo>
#include <QObject>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "analysis/analysis_files.h"
#include "analysis/checkpoint_series.h"
#include "analysis/heads.h"

namespace poslens::gui {
namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

QString provenance(const std::string& checkpoint, const std::string& sha256, const QString& file,
                   const std::string& interventions) {
  QString text = QObject::tr("checkpoint %1 · weights SHA-256 %2")
                     .arg(q(checkpoint), sha256.empty() ? QObject::tr("unknown") : q(sha256));
  if (!interventions.empty()) text += QObject::tr(" · with interventions: %1").arg(q(interventions));
  if (!file.isEmpty()) text += QObject::tr(" · opened from %1").arg(file);
  return text;
}

std::string stem(const std::string& checkpoint) {
  return QFileInfo(q(checkpoint)).fileName().toStdString();
}

/// `v` with the open model's checkpoint and weights digest under it.
AnalysisView of_model(AnalysisView v, const LoadedModel& loaded) {
  v.provenance = provenance(loaded.path, loaded.weights_sha256, {}, loaded.model->config().interventions);
  return v;
}

AnalysisView usage_view(const FrequencyUsage& u, int layer, const std::string& name) {
  AnalysisView v;
  v.kind = QStringLiteral("frequency-usage");
  layer = std::clamp<int>(layer, 0, static_cast<int>(u.q_norm.size(0)) - 1);
  std::tie(v.left, v.right) = frequency_usage_maps(u, layer, name);
  v.title = QObject::tr("Frequency usage of %1, layer %2").arg(q(name)).arg(layer);
  const auto mean = u.q_layer_mean()[layer];
  v.csv = frequency_usage_csv(u);
  v.file_stem = QStringLiteral("frequency-usage-%1").arg(q(name));
  if (mean.isnan().all().item<bool>()) {  // a NoPE layer of a model whose layers differ
    v.summary = QObject::tr("Layer %1 has no rotation (a NoPE layer): its q and k pairs never turn, so it is left empty.")
                    .arg(layer);
    return v;
  }
  const int64_t top = mean.argmax().item<int64_t>();
  v.summary = QObject::tr("Layer %1's queries are largest on component %2 (θ = %3 rad/position, "
                          "%4 vs median %5): high θ on the left, the semantic low frequencies on the right.")
                  .arg(layer)
                  .arg(top)
                  .arg(u.rotary.theta[top].item<double>(), 0, 'g', 3)
                  .arg(mean[top].item<double>(), 0, 'g', 3)
                  .arg(mean.median().item<double>(), 0, 'g', 3);
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
  v.summary = QObject::tr("%1 layers × %2 heads, %3 metrics (analysis/heads.h has each formula).")
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
                                       " tokens per model (Chen et al. 2024 Fig. 1)");
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

AnalysisView result_view(const std::string& analysis, const AnalysisResult& r) {
  AnalysisView v;
  v.kind = q(analysis);
  v.title = q(r.title);
  v.summary = q(r.summary);
  HeatmapData* panes[] = {&v.left, &v.right, &v.third};
  for (size_t i = 0; i < r.maps.size() && i < 3; ++i) *panes[i] = r.maps[i];
  v.curves = r.curves;
  v.csv = r.csv;
  v.file_stem = q(analysis);
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

}  // namespace poslens::gui
