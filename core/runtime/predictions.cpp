#include "core/runtime/predictions.h"

#include <iomanip>
#include <sstream>

#include <torch/torch.h>

#include "core/base/error.h"
#include "core/runtime/model_input.h"

namespace poslens {

LogitsReturned prediction_logits(const ModelConfig& config) {
  return config.predicts_next_token() ? LogitsReturned::Last : LogitsReturned::All;
}

std::vector<PositionPredictions> predictions(const ModelConfig& config, const at::Tensor& logits,
                                             const std::vector<std::string>& labels, int top_k,
                                             int max_positions) {
  const int64_t T = static_cast<int64_t>(labels.size());
  if (!logits.defined() || logits.dim() != 3 || logits.size(2) != config.vocab_size)
    throw Error("predictions: logits must be [1, pos, vocab=" + std::to_string(config.vocab_size) + "]");
  std::vector<int64_t> positions;
  if (config.predicts_next_token()) {
    positions.push_back(T - 1);
  } else {
    if (logits.size(1) != T) throw Error("predictions: a masked LM needs the logits of every position");
    for (int64_t i = 0; i < T; ++i)
      if (labels[static_cast<size_t>(i)] == "[MASK]" || labels[static_cast<size_t>(i)] == "<mask>") positions.push_back(i);
    if (positions.empty())
      for (int64_t i = 0; i < T; ++i) positions.push_back(i);
  }
  if (static_cast<int64_t>(positions.size()) > max_positions) positions.resize(static_cast<size_t>(max_positions));
  std::vector<PositionPredictions> out;
  for (const int64_t pos : positions) {
    const auto row = logits[0][logits.size(1) == 1 ? 0 : pos].to(torch::kCPU, torch::kFloat32);
    const auto top = torch::softmax(row, -1).topk(std::min<int64_t>(top_k, row.size(0)));
    PositionPredictions p{pos, {}};
    for (int64_t k = 0; k < std::get<0>(top).size(0); ++k)
      p.top.emplace_back(std::get<1>(top)[k].item<int64_t>(), std::get<0>(top)[k].item<float>());
    out.push_back(std::move(p));
  }
  return out;
}

std::string describe_predictions(const LoadedModel& model, const std::vector<PositionPredictions>& p) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(3);
  const bool next = model.model->config().predicts_next_token();
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i].top.empty()) continue;
    const auto [id, prob] = p[i].top.front();
    out << (i ? ", " : "") << (next ? "next token: " : "position " + std::to_string(p[i].position) + " → ")
        << "\"" << display_label(token_labels(model, {id})[0]) << "\" (p=" << prob << ")";
  }
  return out.str();
}

}  // namespace poslens
