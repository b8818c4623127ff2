#include "analysis/frequency_curves.h"

#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <sstream>

#include "analysis/rope_frequencies.h"
#include "core/base/error.h"

namespace poslens {
namespace {

std::vector<double> to_vector(const at::Tensor& t) {
  const auto d = t.to(torch::kCPU, torch::kDouble).contiguous();
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

std::vector<bool> to_bools(const at::Tensor& t) {
  std::vector<bool> out;
  const auto b = t.to(torch::kCPU, torch::kBool).contiguous();
  for (int64_t i = 0; i < b.numel(); ++i) out.push_back(b[i].item<bool>());
  return out;
}

void check_index(const char* what, int64_t i, int64_t n, bool allow_minus_one) {
  if (i >= n || i < (allow_minus_one ? -1 : 0))
    throw Error(std::string(what) + " " + std::to_string(i) + " is out of range (" +
                std::to_string(n) + ")");
}

std::string who(int layer, int head) {
  return "L" + std::to_string(layer) + (head < 0 ? " head mean" : " H" + std::to_string(head));
}

}  // namespace

FrequencyCurves probe_curves(const ProbeResult& p, int layer, int head,
                             const std::string& input_note) {
  check_index("layer", layer, p.scores.size(0), false);
  check_index("head", head, p.scores.size(1), true);
  FrequencyCurves c;
  c.layer = layer;
  c.head = head;
  c.T = p.T;
  c.L = p.L;
  c.kept_components = p.kept_components;
  const auto [theta, activated] = layer_theta(p, layer);  // the layer's own θ_c (Gemma 3's local base)
  c.theta = to_vector(theta);
  c.activated = to_bools(activated);
  const auto scores = head < 0 ? p.scores[layer].mean(0) : p.scores[layer][head];
  const auto comps = head < 0 ? p.components[layer].mean(0) : p.components[layer][head];
  c.scores = to_vector(scores);
  for (int64_t k = 0; k < comps.size(0); ++k) c.components.push_back(to_vector(comps[k]));
  c.vaf = to_vector(head < 0 ? p.vaf[layer] : p.vaf_per_head[layer][head]);
  std::ostringstream title;
  title << who(layer, head) << " · U-shape probe: [BOS] + token × " << p.T - 1 << ", mean of "
        << p.n_samples << " tokens" << (input_note.empty() ? "" : " · " + input_note);
  c.title = title.str();
  return c;
}

FrequencyCurves text_curves(const TextDecomposition& d, int head, const std::string& input_note) {
  check_index("head", head, d.components.size(0), true);
  const int64_t T = d.components.size(-1);
  FrequencyCurves c;
  c.layer = d.layer;
  c.head = d.head >= 0 ? d.head : head;  // -1: the mean over the decomposed heads
  c.T = T;
  c.L = d.L;
  c.kept_components = d.kept_components;
  c.theta = to_vector(d.theta);
  c.activated = to_bools(d.activated);
  const auto pick = [&](const at::Tensor& t) { return head < 0 ? t.mean(0) : t[head]; };
  const auto comps = pick(d.components);  // [C, Q, K]
  auto total = comps.sum(0);
  if (d.remainder.defined()) total = total + pick(d.remainder);
  if (d.position_terms.defined()) total = total + pick(d.position_terms);
  c.scores = to_vector(total[T - 1]);
  for (int64_t k = 0; k < comps.size(0); ++k) c.components.push_back(to_vector(comps[k][T - 1]));
  // VAF over the allowed entries of the whole map (masked entries are 0 in both).
  const auto allowed = d.scores[0].isfinite();
  const auto y = total.masked_select(allowed);
  std::vector<at::Tensor> rows;
  for (int64_t k = 0; k < comps.size(0); ++k) rows.push_back(comps[k].masked_select(allowed));
  c.vaf = rows.empty() ? std::vector<double>{}
                       : to_vector(variance_accounted_for(y.unsqueeze(0), torch::stack(rows)));
  for (const auto& label : d.labels) c.key_labels.push_back(label);
  std::ostringstream title;
  title << who(c.layer, c.head) << " · scores of the last query on the input (" << T
        << " tokens); VAF over the whole map" << (input_note.empty() ? "" : " · " + input_note);
  c.title = title.str();
  return c;
}

ComponentMaps component_maps(const TextDecomposition& d, int64_t max_values, const std::string& input_note) {
  ComponentMaps maps;
  maps.layer = d.layer;
  maps.T = d.components.size(-1);
  maps.n_components = d.components.size(1);
  maps.theta = to_vector(d.theta);
  maps.labels = d.labels;
  maps.input_note = input_note;
  const int64_t heads = d.components.size(0);
  const int64_t per_map = maps.n_components * maps.T * maps.T;
  const bool every_head = (heads + 1) * per_map <= max_values;
  if (!every_head && per_map > max_values) {
    maps.note = "component maps of " + std::to_string(maps.T) + " tokens too large to show (" +
                std::to_string(per_map) + " values per head); poslens-cli frequencies writes them";
    return maps;
  }
  if (!every_head) maps.note = "per-head component maps too large to show; the head mean only";
  maps.heads = {-1};
  if (every_head)
    for (int64_t h = 0; h < heads; ++h) maps.heads.push_back(d.head >= 0 ? d.head : static_cast<int>(h));
  // Written in place into the maps' own memory: no copy of the decomposition beside it.
  c10::InferenceMode guard;
  const auto n = static_cast<int64_t>(maps.heads.size());
  maps.values.resize(static_cast<size_t>(n * per_map));
  const auto out = torch::from_blob(maps.values.data(), {n, maps.n_components, maps.T, maps.T}, torch::kFloat32);
  out[0].copy_(d.components.mean(0));
  if (every_head) out.slice(0, 1).copy_(d.components);
  out.masked_fill_(d.scores[0].isfinite().logical_not(), NAN);  // the layer's mask, [Q, K]
  return maps;
}

VafSeries compare_series(const CompareResult& r, int layer) {
  check_index("layer", layer, r.vaf.size(1), false);
  VafSeries s;
  s.layer = layer;
  s.names = r.names;
  s.steps = r.steps;
  for (int64_t i = 0; i < r.vaf.size(0); ++i) s.vaf.push_back(to_vector(r.vaf[i][layer]));
  s.theta = to_vector(r.probes.front().theta);
  s.activated = to_bools(r.probes.front().activated);
  std::ostringstream title;
  title << "L" << layer << " head mean · VAF per component over " << r.names.size()
        << " checkpoints · probe T=" << r.probes.front().T << ", " << r.probes.front().n_samples
        << " tokens";
  s.title = title.str();
  return s;
}

}  // namespace poslens
