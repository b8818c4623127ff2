#include "core/train/evaluate.h"

#include <torch/torch.h>

#include "core/base/error.h"

namespace poslens::train {

BatchScore score_batch(const at::Tensor& logits, const TaskBatch& batch,
                       const std::vector<int64_t>& candidates) {
  const auto device = logits.device();
  const auto predictions = logits.slice(1, 0, logits.size(1) - 1).to(torch::kFloat32);
  const auto targets = batch.tokens.slice(1, 1).to(device);
  const auto answers = batch.answers.to(device);
  const auto nll = torch::nn::functional::cross_entropy(
      predictions.reshape({-1, predictions.size(-1)}), targets.reshape({-1}),
      torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  at::Tensor predicted;
  if (candidates.empty()) {
    predicted = predictions.argmax(-1);
  } else {
    const auto ids = torch::tensor(candidates, torch::kLong).to(device);
    predicted = ids.index_select(0, predictions.index_select(-1, ids).argmax(-1).reshape({-1}))
                    .reshape(targets.sizes());
  }
  BatchScore score;
  score.answers = answers.sum().item<int64_t>();
  score.wrong = (predicted.ne(targets) & answers).sum().item<int64_t>();
  score.loss_sum = nll.reshape(targets.sizes()).masked_select(answers).sum().item<double>();
  return score;
}

SplitResult evaluate(const Transformer& model, const Task& task, const std::string& split,
                     int64_t n, int64_t batch_size) {
  if (n <= 0 || batch_size <= 0) throw Error("evaluate: the number of sequences must be positive");
  c10::InferenceMode inference;
  SplitResult result;
  result.split = split;
  auto rng = split_rng(task.spec().name, split);
  const auto candidates = task.answer_candidates();
  BatchScore total;
  for (int64_t done = 0; done < n; done += batch_size) {
    const auto batch = task.sample(split, std::min(batch_size, n - done), rng);
    at::Tensor logits;
    try {
      logits = model.forward(batch.tokens.to(model.device()));
    } catch (const Error& e) {
      result.unavailable = e.what();
      return result;
    }
    const auto score = score_batch(logits, batch, candidates);
    total.wrong += score.wrong;
    total.answers += score.answers;
    total.loss_sum += score.loss_sum;
    result.sequences += batch.tokens.size(0);
  }
  result.answers = total.answers;
  result.error_pct = total.answers ? 100.0 * total.wrong / total.answers : 0.0;
  result.loss = total.answers ? total.loss_sum / total.answers : 0.0;
  return result;
}

}  // namespace poslens::train
