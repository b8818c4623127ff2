#include "analysis/length_loss.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include "analysis/next_token_loss.h"
#include "core/base/error.h"
#include "core/runtime/sinks.h"
#include "core/runtime/transformer.h"

namespace poslens {

std::string rope_scaling_json(const std::string& spec, int64_t L) {
  if (spec == "none" || spec.empty()) return "";
  const auto colon = spec.find(':');
  const std::string type = spec.substr(0, colon);
  double factor = 0;
  try {
    factor = colon == std::string::npos ? 0 : std::stod(spec.substr(colon + 1));
  } catch (const std::exception&) {
  }
  if (!(factor > 0))
    throw Error("RoPE scaling '" + spec + "': give a factor > 0, e.g. " + type + ":4");
  nlohmann::json j;
  if (type == "linear") {
    j = {{"rope_type", "linear"}, {"factor", factor}};
  } else if (type == "ntk") {
    j = {{"rope_type", "dynamic"}, {"factor", factor}};
  } else if (type == "yarn") {
    j = {{"rope_type", "yarn"}, {"factor", factor}};
  } else if (type == "llama3") {
    j = {{"rope_type", "llama3"}, {"factor", factor}, {"original_max_position_embeddings", L},
         {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0}};
  } else {
    throw Error("RoPE scaling '" + spec + "': expected none, linear:F, ntk:F, yarn:F or llama3:F");
  }
  return j.dump();
}

std::unique_ptr<Transformer> with_rope_scaling(const Transformer& model, const std::string& scaling_json) {
  ModelConfig config = model.config();
  bool found = false;
  for (auto& component : config.pe_components) {
    if (component.type != "rope") continue;
    auto params = nlohmann::json::parse(component.params_json);
    if (scaling_json.empty())
      params.erase("rope_scaling");
    else
      params["rope_scaling"] = nlohmann::json::parse(scaling_json);
    component.params_json = params.dump();
    found = true;
  }
  if (!found)
    throw Error("RoPE scaling applies to RoPE components; this model's position encoding is " +
                model.position_encoding().describe());
  return std::make_unique<Transformer>(std::move(config), model.weights());
}

LossCurve per_position_loss(const Transformer& model, const std::vector<int64_t>& ids, int64_t T,
                            int64_t max_windows, int64_t bos, const Progress& progress) {
  if (T < 2) throw Error("per-position loss needs windows of at least 2 tokens, got " + std::to_string(T));
  const int64_t text_per_window = bos >= 0 ? T - 1 : T;
  int64_t windows = static_cast<int64_t>(ids.size()) / text_per_window;
  if (max_windows > 0) windows = std::min(windows, max_windows);
  if (windows < 1)
    throw Error("the text has " + std::to_string(ids.size()) + " tokens, fewer than one window of " +
                std::to_string(T) + " (give a longer text or a shorter --length)");
  LossCurve curve;
  curve.loss = torch::zeros({T - 1}, torch::kDouble);
  curve.windows = windows;
  c10::InferenceMode inference;
  ForwardOptions options;
  options.logits = LogitsReturned::None;
  for (int64_t w = 0; w < windows; ++w) {
    const auto begin = ids.begin() + w * text_per_window;
    std::vector<int64_t> window(begin, begin + text_per_window);
    if (bos >= 0) window.insert(window.begin(), bos);
    const auto tokens = torch::tensor(window, torch::kLong);
    NextTokenLoss sink(tokens.narrow(0, 1, T - 1), curve.loss);
    model.forward(tokens.unsqueeze(0), sink, {}, options);
    progress.step(w + 1, windows);
  }
  curve.loss /= static_cast<double>(windows);
  return curve;
}

}  // namespace poslens
