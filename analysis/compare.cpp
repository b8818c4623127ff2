#include "analysis/compare.h"

#include "analysis/checkpoint_series.h"

#include <torch/torch.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "core/runtime/run.h"

namespace poslens {
namespace {

namespace fs = std::filesystem;

/// The step a checkpoint was saved at: its training record's "step", else its folder name.
int64_t checkpoint_step(const LoadedModel& model) {
  const auto& training = model.model->config().training_json;
  if (!training.empty()) {
    const auto j = nlohmann::json::parse(training, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("step") && j["step"].is_number_integer())
      return j["step"].get<int64_t>();
  }
  fs::path p(model.path);
  if (p.filename().empty()) p = p.parent_path();
  const int64_t from_folder = step_from_name(p.filename().string());
  return from_folder >= 0 ? from_folder : step_from_name(p.parent_path().filename().string());
}

void check_same_shape(const ProbeResult& first, const ProbeResult& other, const std::string& path) {
  if (other.scores.sizes() != first.scores.sizes() ||
      other.components.sizes() != first.components.sizes())
    throw Error("'" + path + "' cannot be compared with the first checkpoint: its probe has " +
                "layers × heads × components × keys " +
                std::to_string(other.components.size(0)) + "×" +
                std::to_string(other.components.size(1)) + "×" +
                std::to_string(other.components.size(2)) + "×" +
                std::to_string(other.components.size(3)) + ", the first " +
                std::to_string(first.components.size(0)) + "×" +
                std::to_string(first.components.size(1)) + "×" +
                std::to_string(first.components.size(2)) + "×" +
                std::to_string(first.components.size(3)));
}

}  // namespace

CompareResult compare_checkpoints(const std::vector<std::string>& paths, const LoadOptions& load,
                                  const ProbeOptions& options,
                                  const std::function<bool(int64_t, int64_t)>& progress) {
  if (paths.size() < 2) throw Error("comparing needs at least two checkpoints");
  CompareResult out;
  ProbeOptions probe = options;
  const int64_t n_ckpt = static_cast<int64_t>(paths.size());
  for (int64_t i = 0; i < n_ckpt; ++i) {
    const auto& path = paths[static_cast<size_t>(i)];
    const LoadedModel model = load_checkpoint(path, load);
    // The first checkpoint fixes the tokens; the rest must take the same ones.
    if (probe.tokens.empty()) probe.tokens = probe_tokens(model, options.samples, options.seed);
    const int64_t per = static_cast<int64_t>(probe.tokens.size());
    auto result = run_probe(model, probe, [&](int64_t done, int64_t) {
      return !progress || progress(i * per + done, n_ckpt * per);
    });
    if (out.probes.empty()) out.meta = export_metadata(model);
    if (!out.probes.empty()) check_same_shape(out.probes.front(), result, path);
    out.names.push_back(path);
    out.steps.push_back(checkpoint_step(model));
    out.weights_sha256.push_back(model.weights_sha256);
    out.probes.push_back(std::move(result));
  }
  std::vector<at::Tensor> vaf;
  for (const auto& p : out.probes) vaf.push_back(p.vaf);
  out.vaf = torch::stack(vaf);
  return out;
}

}  // namespace poslens
