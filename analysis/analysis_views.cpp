#include "analysis/analysis_views.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "analysis/heatmap_pooling.h"
#include "analysis/rope_markers_data.h"
#include "core/base/error.h"

namespace poslens {

HeatmapData tensor_heatmap(const at::Tensor& values, std::vector<std::string> rows, std::vector<std::string> cols,
                           const std::string& title, const std::string& value_name) {
  const auto v = values.to(torch::kCPU, torch::kFloat32).contiguous();
  HeatmapData d;
  d.rows = d.source_rows = v.size(0);
  d.cols = d.source_cols = v.size(1);
  d.values.assign(v.data_ptr<float>(), v.data_ptr<float>() + v.numel());
  d.row_labels = std::move(rows);
  d.col_labels = std::move(cols);
  d.title = title;
  d.value_name = value_name;
  d.kind = HeatmapKind::Value;
  return d;
}

std::vector<std::string> numbered_labels(const std::string& prefix, int64_t n) {
  std::vector<std::string> labels;
  for (int64_t i = 0; i < n; ++i) labels.push_back(prefix + std::to_string(i));
  return labels;
}


std::pair<HeatmapData, HeatmapData> frequency_usage_maps(const FrequencyUsage& u, int layer,
                                                         const std::string& title) {
  const int64_t L = u.q_norm.size(0);
  if (layer < 0 || layer >= L)
    throw Error("frequency usage: layer " + std::to_string(layer) + " is outside 0.." + std::to_string(L - 1));
  const int64_t C = u.q_norm.size(2);
  std::vector<std::string> components;
  const auto theta = u.rotary.theta.to(torch::kDouble).contiguous();
  const std::vector<double> thetas(theta.data_ptr<double>(), theta.data_ptr<double>() + C);
  // The RoPE landmarks at the training length: activated band, critical dimension, YaRN's ramp.
  const int64_t critical = u.L > 0 ? critical_component(thetas, u.L) : -1;
  const auto yarn = u.L > 0 ? yarn_correction_range(thetas, u.L) : ComponentRange{};
  for (int64_t c = 0; c < C; ++c) {
    // Short enough for an axis label: "c2 AC 0.01" — tags, then θ_c.
    std::string tags;
    const double turns = u.L > 0 ? turns_within(thetas[c], u.L) : 0;
    if (u.L > 0 && turns > 0.5 && turns < 1.0) tags += "A";
    if (c == critical) tags += "C";
    if (!yarn.empty() && c >= yarn.first && c <= yarn.last) tags += "Y";
    char label[48];
    std::snprintf(label, sizeof label, "c%lld%s%s %.2g", static_cast<long long>(c), tags.empty() ? "" : " ",
                  tags.c_str(), thetas[c]);
    components.push_back(label);
  }
  auto heads = tensor_heatmap(u.q_norm[layer], numbered_labels("H", u.q_norm.size(1)), components,
                      title + "  L" + std::to_string(layer) + " mean ‖q⁽ᶜ⁾‖ per head", "mean ‖q⁽ᶜ⁾‖");
  heads.layer = layer;
  heads.row_axis = "head";
  heads.col_axis = u.L > 0 ? "rotary component c and θ_c (A activated band, C critical dimension, Y YaRN "
                             "ramp at L = " + std::to_string(u.L) + ")"
                           : "rotary component c and θ_c (rad/position)";
  auto layers = tensor_heatmap(u.q_layer_mean(), numbered_labels("L", L), components, title + "  mean ‖q⁽ᶜ⁾‖ over heads",
                       "mean ‖q⁽ᶜ⁾‖");
  layers.row_axis = "layer";
  layers.col_axis = heads.col_axis;
  return {heads, layers};
}

std::pair<HeatmapData, HeatmapData> divergence_maps(const PatternDivergence& d,
                                                    const std::vector<std::string>& labels,
                                                    const std::string& title) {
  const int64_t L = d.per_head.size(0);
  auto heads = tensor_heatmap(d.per_head, numbered_labels("L", L), numbered_labels("H", d.per_head.size(1)),
                      title + "  JS divergence per head (nats)", "JS (nats)");
  auto queries = tensor_heatmap(d.per_query, numbered_labels("L", L), labels, title + "  JS at each query, mean over heads",
                        "JS (nats)");
  heads.row_axis = queries.row_axis = "layer";
  heads.col_axis = "head";
  queries.col_axis = "query position";
  return {heads, queries};
}

CurveSet length_loss_curves(const std::vector<LossCurve>& curves, int64_t L, const std::string& title,
                            int64_t smooth) {
  CurveSet set;
  int64_t T = 0;
  for (const auto& c : curves) T = std::max<int64_t>(T, c.loss.size(0));
  if (smooth <= 0) smooth = std::max<int64_t>(1, T / 64);
  set.title = title + (smooth > 1 ? " (moving mean over " + std::to_string(smooth) + " positions)" : "");
  set.x_label = "position";
  set.y_label = "loss (nats), mean over windows";
  for (int64_t i = 0; i < T; ++i) set.x.push_back(static_cast<double>(i));
  std::vector<std::string> checkpoints, scalings;
  const auto index_of = [](std::vector<std::string>& seen, const std::string& key) {
    const auto it = std::find(seen.begin(), seen.end(), key);
    if (it != seen.end()) return static_cast<int>(it - seen.begin());
    seen.push_back(key);
    return static_cast<int>(seen.size()) - 1;
  };
  for (const auto& c : curves) {
    const auto loss = c.loss.to(torch::kDouble).contiguous();
    const double* raw = loss.data_ptr<double>();
    std::vector<double> y(static_cast<size_t>(T), NAN);
    double sum = 0;
    for (int64_t i = 0; i < loss.numel(); ++i) {  // trailing moving mean
      sum += raw[i];
      if (i >= smooth) sum -= raw[i - smooth];
      y[static_cast<size_t>(i)] = sum / static_cast<double>(std::min(i + 1, smooth));
    }
    set.names.push_back(c.name + " (" + std::to_string(c.windows) + " windows)");
    set.y.push_back(std::move(y));
    const auto dot = c.name.find(" · ");
    set.dash.push_back(index_of(checkpoints, c.name.substr(0, dot)));
    set.colour.push_back(index_of(scalings, dot == std::string::npos ? "none" : c.name.substr(dot + 3)));
  }
  if (L > 0)
    for (int64_t k = 1; k * L < T; ++k)
      set.markers.push_back({static_cast<double>(k * L), k == 1 ? "L = " + std::to_string(L) : std::to_string(k) + "L"});
  return set;
}

CurveSet massive_curves(const MassiveActivations& m, const std::string& title) {
  CurveSet set;
  set.title = title;
  set.x_label = "layer";
  set.y_label = "|h| (log scale)";
  set.log_y = true;
  const int64_t L = m.top_values.size(0), k = std::min<int64_t>(3, m.top_values.size(1));
  for (int64_t l = 0; l < L; ++l) set.x.push_back(static_cast<double>(l));
  for (int64_t r = 0; r < k; ++r) {
    set.names.push_back("top " + std::to_string(r + 1));
    std::vector<double> y;
    for (int64_t l = 0; l < L; ++l) y.push_back(std::abs(m.top_values[l][r].item<double>()));
    set.y.push_back(std::move(y));
  }
  set.names.push_back("median");
  std::vector<double> median;
  for (int64_t l = 0; l < L; ++l) median.push_back(m.median[l].item<double>());
  set.y.push_back(std::move(median));
  return set;
}

std::pair<HeatmapData, HeatmapData> offset_maps(const OffsetEffect& e, int64_t T, const std::string& title) {
  auto map = [&](const at::Tensor& pooled, const std::string& what) {
    auto d = heatmap_from_pooled(pooled, T, T);
    d.title = title + "  L" + std::to_string(e.layer) + " H" + std::to_string(e.head) + " " + what;
    d.value_name = "attention";
    d.kind = HeatmapKind::Probability;
    d.layer = e.layer;
    d.head = e.head;
    return d;
  };
  return {map(e.pattern, "pattern, positions 0…T−1"),
          map(e.shifted, "positions shifted by Δ = " + std::to_string(e.offset))};
}

std::vector<HeatmapData> heinsen_maps(const HeinsenStates& s, const std::vector<std::string>& labels,
                                      const std::string& title) {
  std::vector<HeatmapData> maps;
  const std::pair<const at::Tensor*, const char*> parts[] = {
      {&s.state, "state s_i (log)"}, {&s.decay, "decay p_i"}, {&s.logits, "logit h_i"}};
  for (const auto& [values, what] : parts) {
    auto d = tensor_heatmap(values->t(), numbered_labels("f", values->size(1)), labels, title + "  " + what, what);
    d.row_axis = "position-encoding feature";
    d.col_axis = "position";
    if (values == &s.decay) d.kind = HeatmapKind::Gate;  // probabilities in [0, 1]
    maps.push_back(std::move(d));
  }
  return maps;
}

}  // namespace poslens
