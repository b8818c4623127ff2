#pragma once
// What a run predicts: the next token of a causal LM, the masked positions of a masked LM.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "core/runtime/checkpoint.h"

namespace poslens {

/// One position's most likely tokens, best first: (id, probability).
struct PositionPredictions {
  int64_t position = 0;  ///< the query position whose logits these are
  std::vector<std::pair<int64_t, float>> top;
};

/// Which logits the user reads after a run (ForwardOptions::logits): the last position's of a
/// causal LM (the next token); every position's of a masked LM (what each masked position
/// predicts — BERT-style models are short, n_ctx 512).
LogitsReturned prediction_logits(const ModelConfig& config);

/// The predictions a run reports, from the logits prediction_logits() asked for ([1, pos or 1,
/// vocab], any device): a causal LM's next token after the last position; a masked LM's
/// prediction at each position holding the mask token ("[MASK]" or "<mask>"), or at every
/// position when there is none (at most `max_positions` of them). Throws poslens::Error when
/// `logits` does not fit `labels`.
std::vector<PositionPredictions> predictions(const ModelConfig& config, const at::Tensor& logits,
                                             const std::vector<std::string>& labels, int top_k,
                                             int max_positions = 16);

/// One line for a status bar or the CLI: "next token: "x" (p=0.41)" or "masked 3 → "paris"
/// (p=0.52), …", the token texts through display_label.
std::string describe_predictions(const LoadedModel& model, const std::vector<PositionPredictions>& p);

}  // namespace poslens
