#pragma once
// Test error of a model on a task split (docs/training.md): the same test sequences for every
// model (split_rng), scored at the task's answer positions.
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "core/runtime/transformer.h"
#include "core/train/task.h"

namespace poslens::train {

struct SplitResult {
  std::string split;
  int64_t sequences = 0;
  int64_t answers = 0;      ///< scored predictions
  double error_pct = 0;     ///< % of scored predictions whose argmax (over the task's answer
                            ///< candidates) is not the target
  double loss = 0;          ///< mean cross-entropy (nats) of the scored targets, full vocabulary
  std::string unavailable;  ///< non-empty: why this split could not be run (e.g. longer than a
                            ///< learned position table); the numbers are then meaningless
};

/// Error and loss on a batch: `logits` float [batch, T, vocab] (any device), the batch's
/// answers. Returns {number of wrong answers, number of answers, summed loss}.
struct BatchScore {
  int64_t wrong = 0, answers = 0;
  double loss_sum = 0;
};
BatchScore score_batch(const at::Tensor& logits, const TaskBatch& batch,
                       const std::vector<int64_t>& candidates);

/// Runs `model` (inference mode, on its device) on `n` sequences of `split`, `batch_size` at a
/// time. A split the model cannot run (poslens::Error from the forward pass, e.g. longer than
/// its learned positions) is returned with `unavailable` set instead of thrown.
/// Throws poslens::Error for an unknown split.
SplitResult evaluate(const Transformer& model, const Task& task, const std::string& split,
                     int64_t n, int64_t batch_size = 50);

}  // namespace poslens::train
