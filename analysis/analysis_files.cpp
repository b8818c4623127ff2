#include "analysis/analysis_files.h"

#include <torch/torch.h>

#include <cmath>
#include <cstdio>

#include "analysis/analysis_registry.h"
#include "analysis/csv_text.h"
#include "core/base/error.h"
#include "core/position/rope_scaling.h"
#include "core/runtime/model_input.h"

namespace poslens {
namespace {

at::Tensor ids_tensor(const AnalysisInput& input) {
  return torch::tensor(input.ids, torch::kLong).unsqueeze(0);
}

/// The error of a file whose datasets do not fit together.
Error inconsistent(const Hdf5Reader& file, const char* group) {
  return Error(file.path() + ": " + group + " datasets of inconsistent shapes");
}

}  // namespace

std::vector<std::string> read_token_labels(const Hdf5Reader& file) {
  return file.exists("/tokens/text") ? file.read_strings("/tokens/text") : std::vector<std::string>{};
}

void write_massive_activations_hdf5(const std::string& path, const MassiveActivations& m,
                                    const AnalysisInput& input, const ExportMetadata& meta) {
  const std::string g = kMassiveActivationsGroup;
  const std::vector<std::string> dims = {"layer", "rank"};
  std::vector<Hdf5Dataset> d = {
      {g + "/top_values", m.top_values, {}, dims, {}},
      {g + "/top_positions", m.top_positions, {}, dims, {}},
      {g + "/top_dims", m.top_dims, {}, dims, {}},
      {g + "/massive", m.massive, {}, dims, {}},
      {g + "/median", m.median, {}, {"layer"}, {}},
  };
  if (m.means.defined())  // the calibration of the "massive=mean:FILE" intervention
    d.push_back({g + "/means", m.means, {}, {"d_model"},
                 {{"layer", m.means_layer},
                  {"meaning", std::string("per residual dimension, the mean of its massive entries at this layer "
                                          "(the first with any); NaN where it has none")}}});
  const std::vector<Hdf5Attribute> attrs = {
      {"hook", std::string("blocks.{l}.hook_resid_post")},
      {"criterion", std::string("|h| > 100 and |h| > 1000 * median |h| (Sun et al. 2024, arXiv 2402.17762 §2)")}};
  write_analysis_hdf5(path, d, {{g, attrs}}, ids_tensor(input), input.labels, meta);
}

std::string massive_activations_csv(const MassiveActivations& m, const std::vector<std::string>& labels) {
  std::string text = "layer,rank,value,abs,position,token,dim,median,ratio,massive\n";
  for (int64_t l = 0; l < m.top_values.size(0); ++l) {
    const double median = m.median[l].item<double>();
    for (int64_t r = 0; r < m.top_values.size(1); ++r) {
      const int64_t pos = m.top_positions[l][r].item<int64_t>();
      if (pos < 0) continue;  // fewer entries than --top
      const double v = m.top_values[l][r].item<double>();
      // display_label: one line (a BOS piece "\n<s>\n" shows as \n<s>\n).
      const std::string token =
          pos < static_cast<int64_t>(labels.size()) ? display_label(labels[static_cast<size_t>(pos)]) : "";
      text += std::to_string(l) + "," + std::to_string(r) + "," + csv_number(v) + "," + csv_number(std::abs(v)) + "," +
              std::to_string(pos) + "," + csv_quoted(token) + "," + std::to_string(m.top_dims[l][r].item<int64_t>()) +
              "," + csv_number(median) + "," + csv_number(median > 0 ? std::abs(v) / median : NAN) + "," +
              (m.massive[l][r].item<bool>() ? "1" : "0") + "\n";
    }
  }
  return text;
}

void write_frequency_usage_hdf5(const std::string& path, const FrequencyUsage& u,
                                const AnalysisInput& input, const ExportMetadata& meta) {
  const std::string g = kFrequencyUsageGroup;
  std::vector<Hdf5Dataset> d = {
      {g + "/q_norm", u.q_norm, {}, {"layer", "head", "component"}, {}},
      {g + "/k_norm", u.k_norm, {}, {"layer", "kv_head", "component"}, {}},
      {g + "/q_layer_mean", u.q_layer_mean(), {}, {"layer", "component"}, {}},
      {g + "/k_layer_mean", u.k_layer_mean(), {}, {"layer", "component"}, {}},
      {g + "/theta", u.rotary.theta.to(torch::kDouble), {}, {"component"}, {}},
  };
  const std::vector<Hdf5Attribute> attrs = {
      {"pairing", std::string(to_string(u.rotary.pairing))},
      {"rotary_dim", u.rotary.rotary_dim},
      {"kept_components", u.rotary.kept_components},
      {"attention_factor", u.rotary.attention_factor},
      {"L", u.L},
      {"measure", std::string("mean over positions of the 2-D chunk norm of q and k per rotary component "
                              "(Barbero et al. 2024, arXiv 2410.06205)")}};
  write_analysis_hdf5(path, d, {{g, attrs}}, ids_tensor(input), input.labels, meta);
}

MassiveActivations read_massive_activations_hdf5(const Hdf5Reader& file) {
  check_analysis_file_version(file);
  const std::string g = std::string(kMassiveActivationsGroup) + "/";
  MassiveActivations m{file.read(g + "top_values"), file.read(g + "top_positions"), file.read(g + "top_dims"),
                       file.read(g + "median"), file.read(g + "massive").to(torch::kBool)};
  if (m.top_values.dim() != 2 || m.top_positions.sizes() != m.top_values.sizes() ||
      m.top_dims.sizes() != m.top_values.sizes() || m.massive.sizes() != m.top_values.sizes() ||
      m.median.dim() != 1 || m.median.size(0) != m.top_values.size(0) || m.top_values.size(1) < 1)
    throw inconsistent(file, kMassiveActivationsGroup);
  if (file.exists(g + "means")) {
    m.means = file.read(g + "means").to(torch::kDouble);
    m.means_layer = file.int_attribute(g + "means", "layer", -1);
    if (m.means.dim() != 1 || m.means_layer < 0 || m.means_layer >= m.top_values.size(0))
      throw inconsistent(file, kMassiveActivationsGroup);
  }
  return m;
}

std::string frequency_usage_csv(const FrequencyUsage& u) {
  std::string text = "layer,head,component,theta,q_norm,k_norm\n";
  const int64_t L = u.q_norm.size(0), H = u.q_norm.size(1), C = u.q_norm.size(2);
  const int64_t group = H / std::max<int64_t>(u.k_norm.size(1), 1);
  const auto theta = u.rotary.theta.to(torch::kDouble).contiguous();
  for (int64_t l = 0; l < L; ++l)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t c = 0; c < C; ++c)
        text += std::to_string(l) + "," + std::to_string(h) + "," + std::to_string(c) + "," +
                csv_number(theta[c].item<double>()) + "," + csv_number(u.q_norm[l][h][c].item<double>()) + "," +
                csv_number(u.k_norm[l][h / group][c].item<double>()) + "\n";
  return text;
}

FrequencyUsage read_frequency_usage_hdf5(const Hdf5Reader& file) {
  check_analysis_file_version(file);
  const std::string g = kFrequencyUsageGroup;
  FrequencyUsage u;
  u.q_norm = file.read(g + "/q_norm");
  u.k_norm = file.read(g + "/k_norm");
  u.rotary.theta = file.read(g + "/theta");
  u.rotary.rotary_dim = file.int_attribute(g, "rotary_dim");
  u.rotary.kept_components = file.int_attribute(g, "kept_components");
  u.L = file.int_attribute(g, "L");
  if (u.q_norm.dim() != 3 || u.k_norm.dim() != 3 || u.rotary.theta.dim() != 1 ||
      u.q_norm.size(2) != u.rotary.theta.size(0) || u.k_norm.size(2) != u.q_norm.size(2) || u.q_norm.size(0) < 1 ||
      u.k_norm.size(0) != u.q_norm.size(0) || u.k_norm.size(1) < 1 || u.q_norm.size(1) % u.k_norm.size(1) != 0)
    throw inconsistent(file, kFrequencyUsageGroup);
  return u;
}

void write_divergence_hdf5(const std::string& path, const PatternDivergence& r, const AnalysisInput& input,
                           const ExportMetadata& first, const ExportMetadata& second) {
  const std::string g = kDivergenceGroup;
  std::vector<Hdf5Dataset> d = {
      {g + "/per_head", r.per_head, {}, {"layer", "head"}, {}},
      {g + "/per_query", r.per_query, {}, {"layer", "q_pos"}, {}},
  };
  const std::vector<Hdf5Attribute> attrs = {
      {"measure", std::string("jensen-shannon (nats), row-wise, mean over queries")},
      {"first_checkpoint", first.checkpoint},
      {"second_checkpoint", second.checkpoint},
      {"second_model_config", second.model_config_json},
      {"second_weights_sha256", second.weights_sha256}};
  write_analysis_hdf5(path, d, {{g, attrs}}, ids_tensor(input), input.labels, first);
}

std::string divergence_csv(const PatternDivergence& r) {
  std::string text = "layer,head,js_divergence\n";
  for (int64_t l = 0; l < r.per_head.size(0); ++l)
    for (int64_t h = 0; h < r.per_head.size(1); ++h)
      text += std::to_string(l) + "," + std::to_string(h) + "," + csv_number(r.per_head[l][h].item<double>()) + "\n";
  return text;
}

DivergenceFile read_divergence_hdf5(const Hdf5Reader& file) {
  check_analysis_file_version(file);
  const std::string g = kDivergenceGroup;
  DivergenceFile f{{file.read(g + "/per_head"), file.read(g + "/per_query")},
                   file.string_attribute(g, "second_checkpoint")};
  const auto& d = f.divergence;
  if (d.per_head.dim() != 2 || d.per_query.dim() != 2 || d.per_head.size(0) != d.per_query.size(0) ||
      d.per_head.numel() == 0)
    throw inconsistent(file, kDivergenceGroup);
  return f;
}

void write_length_loss_hdf5(const std::string& path, const std::vector<LossCurve>& curves, int64_t L,
                            const std::string& text_source, const ExportMetadata& meta) {
  const std::string g = kLengthLossGroup;
  std::vector<at::Tensor> loss;
  std::vector<std::string> names;
  std::vector<int64_t> windows;
  for (const auto& c : curves) {
    loss.push_back(c.loss.to(torch::kDouble));
    names.push_back(c.name);
    windows.push_back(c.windows);
  }
  std::vector<Hdf5Dataset> d = {
      {g + "/loss", torch::stack(loss), {}, {"curve", "position"}, {}},
      {g + "/curves", {}, names, {"curve"}, {}},
      {g + "/windows", torch::tensor(windows, torch::kLong), {}, {"curve"}, {}},
  };
  const std::vector<Hdf5Attribute> attrs = {
      {"L", L},
      {"T", curves.empty() ? int64_t{0} : curves[0].loss.size(0) + 1},
      {"text", text_source},
      {"measure", std::string("-ln p(next token) at each position, nats, mean over windows")}};
  write_analysis_hdf5(path, d, {{g, attrs}}, {}, {}, meta);
}

LengthLossFile read_length_loss_hdf5(const Hdf5Reader& file) {
  check_analysis_file_version(file);
  const std::string g = kLengthLossGroup;
  const auto loss = file.read(g + "/loss");
  const auto names = file.read_strings(g + "/curves");
  const auto windows = file.read(g + "/windows");
  if (loss.dim() != 2 || loss.size(0) != static_cast<int64_t>(names.size()) || windows.numel() != loss.size(0))
    throw inconsistent(file, kLengthLossGroup);
  LengthLossFile f;
  for (int64_t c = 0; c < loss.size(0); ++c)
    f.curves.push_back({names[static_cast<size_t>(c)], loss[c], windows[c].item<int64_t>()});
  f.L = file.int_attribute(g, "L");
  return f;
}

std::string length_loss_csv(const std::vector<LossCurve>& curves) {
  std::string text = "position";
  for (const auto& c : curves) text += "," + csv_quoted(c.name);
  text += "\n";
  const int64_t T = curves.empty() ? 0 : curves[0].loss.size(0);
  for (int64_t i = 0; i < T; ++i) {
    text += std::to_string(i);
    for (const auto& c : curves) text += "," + csv_number(c.loss[i].item<double>());
    text += "\n";
  }
  return text;
}

void write_position_offset_hdf5(const std::string& path, const OffsetEffect& e, const AnalysisInput& input,
                                const ExportMetadata& meta) {
  const std::string g = kPositionOffsetGroup;
  std::vector<Hdf5Dataset> d = {
      {g + "/per_head", e.divergence.per_head, {}, {"layer", "head"}, {}},
      {g + "/per_query", e.divergence.per_query, {}, {"layer", "q_pos"}, {}},
      {g + "/pattern", e.pattern, {}, {"q_block", "k_block"}, {}},
      {g + "/shifted", e.shifted, {}, {"q_block", "k_block"}, {}},
  };
  const std::vector<Hdf5Attribute> attrs = {
      {"offset", e.offset},
      {"layer", int64_t{e.layer}},
      {"head", int64_t{e.head}},
      {"measure", std::string("jensen-shannon (nats) between the patterns at offset 0 and at offset")}};
  write_analysis_hdf5(path, d, {{g, attrs}}, ids_tensor(input), input.labels, meta);
}

OffsetEffect read_position_offset_hdf5(const Hdf5Reader& file) {
  check_analysis_file_version(file);
  const std::string g = kPositionOffsetGroup;
  OffsetEffect e;
  e.divergence = {file.read(g + "/per_head"), file.read(g + "/per_query")};
  e.pattern = file.read(g + "/pattern").to(torch::kFloat32);
  e.shifted = file.read(g + "/shifted").to(torch::kFloat32);
  e.offset = file.int_attribute(g, "offset");
  e.layer = static_cast<int>(file.int_attribute(g, "layer"));
  e.head = static_cast<int>(file.int_attribute(g, "head"));
  if (e.divergence.per_head.dim() != 2 || e.pattern.dim() != 2 || e.shifted.sizes() != e.pattern.sizes() ||
      e.divergence.per_query.dim() != 2)
    throw inconsistent(file, kPositionOffsetGroup);
  return e;
}

void write_heinsen_states_hdf5(const std::string& path, const HeinsenStates& s, const AnalysisInput& input,
                               const ExportMetadata& meta) {
  const std::string g = kHeinsenStatesGroup;
  std::vector<Hdf5Dataset> d = {
      {g + "/state", s.state, {}, {"pos", "feature"}, {}},
      {g + "/decay", s.decay, {}, {"pos", "feature"}, {}},
      {g + "/logits", s.logits, {}, {"pos", "feature"}, {}},
  };
  const std::vector<Hdf5Attribute> attrs = {
      {"recurrence", std::string("s_i = log(p_i exp(s_{i-1}) + exp(h_i)), s_0 = 0 (Heinsen 2024, eqs. 1-3)")}};
  write_analysis_hdf5(path, d, {{g, attrs}}, ids_tensor(input), input.labels, meta);
}

HeinsenStates read_heinsen_states_hdf5(const Hdf5Reader& file) {
  check_analysis_file_version(file);
  const std::string g = kHeinsenStatesGroup;
  HeinsenStates s{file.read(g + "/state"), file.read(g + "/decay"), file.read(g + "/logits")};
  if (s.state.dim() != 2 || s.decay.sizes() != s.state.sizes() || s.logits.sizes() != s.state.sizes())
    throw inconsistent(file, kHeinsenStatesGroup);
  return s;
}

std::string heinsen_states_csv(const HeinsenStates& s, const std::vector<std::string>& labels) {
  std::string text = "position,token,feature,state,decay,logit\n";
  const auto state = s.state.contiguous(), decay = s.decay.contiguous(), logits = s.logits.contiguous();
  const int64_t T = state.size(0), F = state.size(1);
  const double *ps = state.data_ptr<double>(), *pd = decay.data_ptr<double>(), *pl = logits.data_ptr<double>();
  for (int64_t i = 0; i < T; ++i) {
    const std::string token = i < static_cast<int64_t>(labels.size()) ? csv_quoted(display_label(labels[static_cast<size_t>(i)])) : "";
    for (int64_t f = 0; f < F; ++f)
      text += std::to_string(i) + "," + token + "," + std::to_string(f) + "," + csv_number(ps[i * F + f]) + "," +
              csv_number(pd[i * F + f]) + "," + csv_number(pl[i * F + f]) + "\n";
  }
  return text;
}

}  // namespace poslens
