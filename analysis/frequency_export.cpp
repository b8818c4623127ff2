#include "analysis/frequency_export.h"

#include <torch/torch.h>

#include "analysis/analysis_registry.h"
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

}  // namespace poslens
