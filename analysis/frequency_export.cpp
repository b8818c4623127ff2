#include "analysis/frequency_export.h"

#include <torch/torch.h>

#include "analysis/analysis_files.h"
#include "analysis/analysis_registry.h"
#include "core/base/error.h"
#include "analysis/rope_markers_data.h"

namespace poslens {
namespace {

using Datasets = std::vector<Hdf5Dataset>;
using Attributes = std::vector<Hdf5Attribute>;

void add(Datasets& out, const std::string& group, const std::string& name, const at::Tensor& t,
         std::vector<std::string> dims) {
  if (t.defined()) out.push_back({group + "/" + name, t.contiguous(), {}, std::move(dims), {}});
}

/// θ_c, the activated band and the shared attributes of every frequency file.
void add_frequencies(Datasets& out, const std::string& group, const at::Tensor& theta,
                     const at::Tensor& activated) {
  add(out, group, "theta", theta.to(torch::kDouble), {"component"});
  add(out, group, "activated", activated, {"component"});
}

}  // namespace

namespace {

/// The RoPE landmarks of θ_c at training length L (rope_markers_data.h) as attributes.
Attributes marker_attributes(const at::Tensor& theta, int64_t L) {
  if (L < 1) return {};
  const auto t = theta.to(torch::kCPU, torch::kDouble).contiguous();
  const std::vector<double> values(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
  const auto yarn = yarn_correction_range(values, L);
  return {{"critical_components", critical_component(values, L)},
          {"yarn_ramp", std::vector<int64_t>{yarn.first, yarn.last}}};
}

void add_probe(Datasets& d, std::vector<std::pair<std::string, Attributes>>& groups,
               const std::string& g, const ProbeResult& p, uint64_t seed, bool every_token) {
  add(d, g, "scores", p.scores, {"layer", "head", "key_pos"});
  add(d, g, "scores_std", p.scores_std, {"layer", "head", "key_pos"});
  add(d, g, "components", p.components, {"layer", "head", "component", "key_pos"});
  add(d, g, "remainder", p.remainder, {"layer", "head", "key_pos"});
  add(d, g, "position_terms", p.position_terms, {"layer", "head", "key_pos"});
  add(d, g, "vaf", p.vaf, {"layer", "component"});
  add(d, g, "vaf_per_head", p.vaf_per_head, {"layer", "head", "component"});
  add_frequencies(d, g, p.theta, p.activated);
  add(d, g, "theta_per_layer", p.theta_per_layer, {"layer", "component"});
  add(d, g, "activated_per_layer", p.activated_per_layer, {"layer", "component"});
  add(d, g, "tokens", torch::tensor(p.tokens, torch::kLong), {"sample"});
  groups.push_back({g,
                    {{"T", p.T},
                     {"n_samples", p.n_samples},
                     {"L", p.L},
                     {"pairing", p.pairing},
                     {"bos_id", p.bos_id},
                     {"kept_components", p.kept_components},
                     {"seed", static_cast<int64_t>(seed)},
                     {"sampling", std::string(every_token ? "all" : "random")}}});
  for (auto& a : marker_attributes(p.theta, p.L)) groups.back().second.push_back(a);
}

}  // namespace

void write_probe_hdf5(const std::string& path, const ProbeResult& p, uint64_t seed,
                      bool every_token, const ExportMetadata& meta,
                      const ProbeResult* extrapolation) {
  Datasets d;
  std::vector<std::pair<std::string, Attributes>> groups;
  add_probe(d, groups, kProbeGroup, p, seed, every_token);
  if (extrapolation)
    add_probe(d, groups, kProbeExtrapolationGroup, *extrapolation, seed, every_token);
  write_analysis_hdf5(path, d, groups, {}, {}, meta);
}

void write_frequencies_hdf5(const std::string& path, const TextDecomposition& t,
                            const ExportMetadata& meta) {
  const std::string g = kFrequenciesGroup;
  Datasets d;
  add(d, g, "components", t.components, {"head", "component", "q_pos", "k_pos"});
  add(d, g, "scores", t.scores, {"head", "q_pos", "k_pos"});
  add(d, g, "remainder", t.remainder, {"head", "q_pos", "k_pos"});
  add(d, g, "position_terms", t.position_terms, {"head", "q_pos", "k_pos"});
  add_frequencies(d, g, t.theta, t.activated);
  const Attributes attrs = {{"layer", int64_t{t.layer}},
                            {"head", int64_t{t.head}},
                            {"L", t.L},
                            {"pairing", t.pairing},
                            {"kept_components", t.kept_components}};
  const auto ids = torch::tensor(t.ids, torch::kLong).unsqueeze(0);
  write_analysis_hdf5(path, d, {{g, attrs}}, ids, t.labels, meta);
}

void write_compare_hdf5(const std::string& path, const CompareResult& c,
                        const ExportMetadata& meta) {
  const std::string g = kCompareGroup;
  const auto& first = c.probes.front();
  std::vector<at::Tensor> scores, components;
  for (const auto& p : c.probes) {
    scores.push_back(p.scores);
    components.push_back(p.components.mean(1));
  }
  Datasets d;
  add(d, g, "vaf", c.vaf, {"checkpoint", "layer", "component"});
  d.push_back({g + "/checkpoints", {}, c.names, {"checkpoint"}, {}});
  // Identical digests under different names mean identical weights (Pythia issue #205).
  if (c.weights_sha256.size() == c.names.size())
    d.push_back({g + "/weights_sha256", {}, c.weights_sha256, {"checkpoint"}, {}});
  add(d, g, "steps", torch::tensor(c.steps, torch::kLong), {"checkpoint"});
  add(d, g, "scores", torch::stack(scores), {"checkpoint", "layer", "head", "key_pos"});
  add(d, g, "components", torch::stack(components), {"checkpoint", "layer", "component", "key_pos"});
  add_frequencies(d, g, first.theta, first.activated);
  const Attributes attrs = {{"T", first.T},
                            {"n_samples", first.n_samples},
                            {"L", first.L},
                            {"pairing", first.pairing}};
  write_analysis_hdf5(path, d, {{g, attrs}}, {}, {}, meta);
}

namespace {

Error inconsistent(const Hdf5Reader& file, const std::string& group) {
  return Error(file.path() + ": " + group + " datasets of inconsistent shapes");
}

at::Tensor optional(const Hdf5Reader& file, const std::string& path) {
  return file.exists(path) ? file.read(path).to(torch::kFloat32) : at::Tensor();
}

/// θ_c and the activated band of `group`; throws when they differ in length.
void read_frequencies(const Hdf5Reader& file, const std::string& group, at::Tensor& theta, at::Tensor& activated) {
  theta = file.read(group + "/theta").to(torch::kDouble);
  activated = file.read(group + "/activated").to(torch::kBool);
  if (theta.dim() != 1 || activated.sizes() != theta.sizes()) throw inconsistent(file, group);
}

std::vector<int64_t> int64_list(const at::Tensor& t) {
  const auto c = t.to(torch::kLong).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

/// Checks a probe's shapes: scores [layer, head, key], components [layer, head, C, key], vaf
/// [layer, C], the optional [layer, head, key] terms and vaf_per_head [layer, head, C].
void check_probe(const Hdf5Reader& file, const std::string& group, const ProbeResult& p) {
  const int64_t C = p.theta.size(0);
  const auto& s = p.scores;
  const auto like_scores = [&](const at::Tensor& t) { return !t.defined() || t.sizes() == s.sizes(); };
  if (s.dim() != 3 || p.components.dim() != 4 || p.components.size(0) != s.size(0) ||
      p.components.size(1) != s.size(1) || p.components.size(2) != C || p.components.size(3) != s.size(2) ||
      p.vaf.dim() != 2 || p.vaf.size(0) != s.size(0) || p.vaf.size(1) != C || !like_scores(p.scores_std) ||
      !like_scores(p.remainder) || !like_scores(p.position_terms) ||
      (p.vaf_per_head.defined() &&
       p.vaf_per_head.sizes() != at::IntArrayRef({s.size(0), s.size(1), C})) ||
      p.theta_per_layer.defined() != p.activated_per_layer.defined() ||
      (p.theta_per_layer.defined() && (p.theta_per_layer.sizes() != at::IntArrayRef({s.size(0), C}) ||
                                       p.activated_per_layer.sizes() != p.theta_per_layer.sizes())))
    throw inconsistent(file, group);
}

}  // namespace

ProbeResult read_probe_hdf5(const Hdf5Reader& file) {
  check_analysis_file_version(file);
  const std::string g = kProbeGroup;
  ProbeResult p;
  p.scores = file.read(g + "/scores").to(torch::kFloat32);
  p.scores_std = optional(file, g + "/scores_std");
  p.components = file.read(g + "/components").to(torch::kFloat32);
  p.remainder = optional(file, g + "/remainder");
  p.position_terms = optional(file, g + "/position_terms");
  p.vaf = file.read(g + "/vaf").to(torch::kFloat32);
  p.vaf_per_head = optional(file, g + "/vaf_per_head");
  read_frequencies(file, g, p.theta, p.activated);
  if (file.exists(g + "/theta_per_layer")) p.theta_per_layer = file.read(g + "/theta_per_layer").to(torch::kDouble);
  if (file.exists(g + "/activated_per_layer"))
    p.activated_per_layer = file.read(g + "/activated_per_layer").to(torch::kBool);
  if (file.exists(g + "/tokens")) p.tokens = int64_list(file.read(g + "/tokens"));
  p.T = file.int_attribute(g, "T", p.scores.dim() == 3 ? p.scores.size(2) : 0);
  p.n_samples = file.int_attribute(g, "n_samples");
  p.L = file.int_attribute(g, "L");
  p.bos_id = file.int_attribute(g, "bos_id", -1);
  p.pairing = file.string_attribute(g, "pairing");
  p.kept_components = file.int_attribute(g, "kept_components", p.theta.size(0));
  check_probe(file, g, p);
  return p;
}

TextDecomposition read_frequencies_hdf5(const Hdf5Reader& file) {
  check_analysis_file_version(file);
  const std::string g = kFrequenciesGroup;
  TextDecomposition d;
  d.layer = static_cast<int>(file.int_attribute(g, "layer"));
  d.head = static_cast<int>(file.int_attribute(g, "head", -1));
  d.L = file.int_attribute(g, "L");
  d.pairing = file.string_attribute(g, "pairing");
  d.components = file.read(g + "/components").to(torch::kFloat32);
  d.scores = file.read(g + "/scores").to(torch::kFloat32);
  d.remainder = optional(file, g + "/remainder");
  d.position_terms = optional(file, g + "/position_terms");
  read_frequencies(file, g, d.theta, d.activated);
  d.kept_components = file.int_attribute(g, "kept_components", d.theta.size(0));
  d.labels = read_token_labels(file);
  if (file.exists("/tokens/ids")) d.ids = int64_list(file.read("/tokens/ids"));
  const auto& c = d.components;
  const auto like_scores = [&](const at::Tensor& t) { return !t.defined() || t.sizes() == d.scores.sizes(); };
  if (c.dim() != 4 || d.scores.dim() != 3 || c.size(0) != d.scores.size(0) || c.size(1) != d.theta.size(0) ||
      c.size(2) != d.scores.size(1) || c.size(3) != d.scores.size(2) || d.layer < 0 || d.head < -1 ||
      !like_scores(d.remainder) || !like_scores(d.position_terms) ||
      (!d.labels.empty() && static_cast<int64_t>(d.labels.size()) != c.size(3)))
    throw inconsistent(file, g);
  return d;
}

CompareResult read_compare_hdf5(const Hdf5Reader& file) {
  check_analysis_file_version(file);
  const std::string g = kCompareGroup;
  CompareResult r;
  r.names = file.read_strings(g + "/checkpoints");
  r.steps = int64_list(file.read(g + "/steps"));
  if (file.exists(g + "/weights_sha256")) r.weights_sha256 = file.read_strings(g + "/weights_sha256");
  r.vaf = file.read(g + "/vaf").to(torch::kFloat32);
  const auto scores = file.read(g + "/scores").to(torch::kFloat32);
  const auto components = file.read(g + "/components").to(torch::kFloat32);
  const auto n = static_cast<int64_t>(r.names.size());
  if (n < 1 || r.vaf.dim() != 3 || r.vaf.size(0) != n || scores.dim() != 4 || scores.size(0) != n ||
      components.dim() != 4 || components.size(0) != n || static_cast<int64_t>(r.steps.size()) != n ||
      (!r.weights_sha256.empty() && static_cast<int64_t>(r.weights_sha256.size()) != n))
    throw inconsistent(file, g);
  // What every checkpoint shares, read once: θ_c, the band and the probe's settings.
  ProbeResult shared;
  read_frequencies(file, g, shared.theta, shared.activated);
  shared.T = file.int_attribute(g, "T", scores.size(3));
  shared.n_samples = file.int_attribute(g, "n_samples");
  shared.L = file.int_attribute(g, "L");
  shared.pairing = file.string_attribute(g, "pairing");
  shared.kept_components = file.int_attribute(g, "kept_components", shared.theta.size(0));
  for (int64_t i = 0; i < n; ++i) {
    ProbeResult p = shared;
    p.scores = scores[i].mean(1, true);
    p.components = components[i].unsqueeze(1);
    p.vaf = r.vaf[i];
    check_probe(file, g, p);
    r.probes.push_back(std::move(p));
  }
  return r;
}

}  // namespace poslens
