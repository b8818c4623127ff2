#include "analysis/value_norms.h"

#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "analysis/analysis_registry.h"
#include "analysis/analysis_views.h"
#include "analysis/csv_text.h"
#include "core/base/error.h"
#include "core/runtime/model_input.h"

namespace poslens {

at::Tensor ValueNorms::first_token_ratio() const {
  const int64_t L = norms.size(0), H = norms.size(1), T = norms.size(2);
  if (T < 2) return torch::full({L, H}, std::numeric_limits<double>::quiet_NaN(), torch::kDouble);
  const auto n = norms.to(torch::kDouble);
  const auto rest = std::get<0>(n.narrow(2, 1, T - 1).median(2));
  return n.select(2, 0) / rest;
}

ValueNormSink::ValueNormSink(int64_t n_layers, int64_t n_kv_heads, int64_t T)
    : norms_(torch::full({n_layers, n_kv_heads, T}, std::numeric_limits<float>::quiet_NaN(), torch::kFloat32)) {}

bool ValueNormSink::wants(const HookPoint& point) const {
  return point.kind == HookKind::V && point.stack == HookStack::Blocks;
}

void ValueNormSink::tensor(const HookPoint& point, const at::Tensor& value, int64_t pos_begin) {
  if (point.layer < 0 || point.layer >= norms_.size(0)) return;
  if (value.size(0) != 1)
    throw Error("value norms: measured on one sequence, got a batch of " + std::to_string(value.size(0)));
  // [1, pos, kv_head, d_head] -> [kv_head, pos], norms in float32 whatever the model's dtype.
  const auto norms = value[0].detach().to(torch::kFloat32).norm(2, -1).transpose(0, 1).to(torch::kCPU);
  // A layer with fewer KV heads than the most (Gemma 4's global layers) leaves the rest NaN.
  norms_[point.layer].narrow(0, 0, norms.size(0)).narrow(1, pos_begin, norms.size(1)).copy_(norms);
}

ValueNorms compute_value_norms(const LoadedModel& loaded, const std::vector<int64_t>& ids, const Progress& progress) {
  require_one_stack(loaded, "Value norms");
  if (ids.empty()) throw Error("no tokens to measure (the input is empty)");
  const auto& cfg = loaded.model->config();
  ValueNormSink sink(cfg.n_layers, cfg.most_kv_heads(), static_cast<int64_t>(ids.size()));
  c10::InferenceMode inference;
  ForwardOptions options;
  options.logits = LogitsReturned::None;
  loaded.model->forward(torch::tensor(ids, torch::kLong).unsqueeze(0), sink, progress.layers(), options);
  return sink.result();
}

void write_value_norms_hdf5(const std::string& path, const ValueNorms& v, const AnalysisInput& input,
                            const ExportMetadata& meta) {
  const std::string g = kValueNormsGroup;
  const std::vector<Hdf5Dataset> d = {
      {g + "/norms", v.norms, {}, {"layer", "kv_head", "pos"}, {}},
      {g + "/first_token_ratio", v.first_token_ratio(), {}, {"layer", "kv_head"}, {}},
  };
  const std::vector<Hdf5Attribute> attrs = {
      {"hook", std::string("blocks.{l}.attn.hook_v")},
      {"measure", std::string("L2 norm of each token's value vector per kv head; first_token_ratio = |v_0| / "
                              "median_{t>=1} |v_t| (value-state drains: Guo et al. 2024, arXiv 2410.13835)")}};
  write_analysis_hdf5(path, d, {{g, attrs}}, torch::tensor(input.ids, torch::kLong).unsqueeze(0), input.labels,
                      meta);
}

ValueNorms read_value_norms_hdf5(const Hdf5Reader& file) {
  check_analysis_file_version(file);
  ValueNorms v{file.read(std::string(kValueNormsGroup) + "/norms").to(torch::kFloat32)};
  if (v.norms.dim() != 3 || v.norms.size(2) < 1)
    throw Error(file.path() + ": " + kValueNormsGroup + " datasets of inconsistent shapes");
  return v;
}

std::string value_norms_csv(const ValueNorms& v, const std::vector<std::string>& labels) {
  std::string text = "layer,kv_head,position,token,norm\n";
  const auto n = v.norms.contiguous();
  const int64_t L = n.size(0), H = n.size(1), T = n.size(2);
  const float* p = n.data_ptr<float>();
  for (int64_t l = 0; l < L; ++l)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t) {
        const std::string token =
            t < static_cast<int64_t>(labels.size()) ? csv_quoted(display_label(labels[static_cast<size_t>(t)])) : "";
        text += std::to_string(l) + "," + std::to_string(h) + "," + std::to_string(t) + "," + token + "," +
                csv_number(p[(l * H + h) * T + t]) + "\n";
      }
  return text;
}

AnalysisResult value_norms_result(const ValueNorms& v, const AnalysisInput& input, const std::string& name) {
  AnalysisResult r;
  r.title = "Value norms of " + name;
  const auto ratio = v.first_token_ratio();
  const int64_t L = v.norms.size(0), H = v.norms.size(1), T = v.norms.size(2);
  auto heads = tensor_heatmap(ratio, numbered_labels("L", L), numbered_labels("H", H),
                              name + "  ‖v₀‖ / median ‖v‖ per kv head", "ratio");
  heads.row_axis = "layer";
  heads.col_axis = "kv head";
  auto positions = tensor_heatmap(v.norms.mean(1), numbered_labels("L", L), input.labels,
                                  name + "  ‖v‖ at each position, mean over kv heads", "‖v‖");
  positions.row_axis = "layer";
  positions.col_axis = "position";
  r.maps = {heads, positions};
  if (T < 2) {
    r.summary = "one token: no ratio to the others (give a longer input)";
  } else {
    const auto flat = ratio.flatten();
    const int64_t low = flat.argmin().item<int64_t>();
    char line[256];
    std::snprintf(line, sizeof line,
                  "%lld layers × %lld kv heads over %lld tokens; ‖v₀‖ / median ‖v‖ from %.3g (L%lld H%lld) to %.3g, "
                  "median %.3g (≪ 1: the first token is a value-state drain)",
                  static_cast<long long>(L), static_cast<long long>(H), static_cast<long long>(T),
                  flat[low].item<double>(), static_cast<long long>(low / H), static_cast<long long>(low % H),
                  flat.max().item<double>(), flat.median().item<double>());
    r.summary = line;
  }
  r.csv = value_norms_csv(v, input.labels);
  r.write_hdf5 = [v, input](const std::string& path, const ExportMetadata& meta) {
    write_value_norms_hdf5(path, v, input, meta);
  };
  return r;
}

AnalysisResult run_value_norms(const LoadedModel& model, const AnalysisInput& input, const Progress& progress) {
  return value_norms_result(compute_value_norms(model, input.ids, progress), input,
                            std::filesystem::path(model.path).filename().string());
}

AnalysisResult read_value_norms(const Hdf5Reader& file) {
  const auto v = read_value_norms_hdf5(file);
  AnalysisInput input;
  if (file.exists("/tokens/ids")) {
    const auto ids = file.read("/tokens/ids").flatten().contiguous();
    input.ids.assign(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + ids.numel());
  }
  input.labels = read_token_labels(file);
  return value_norms_result(v, input, std::filesystem::path(file.string_attribute("/", "checkpoint")).filename().string());
}

}  // namespace poslens
