#include "analysis/forward_cost.h"

#include <torch/torch.h>

#include <chrono>

namespace poslens {

double plain_forward_seconds(const Transformer& model, const at::Tensor& tokens) {
  c10::InferenceMode inference;
  NoHooks none;
  ForwardOptions options;
  options.logits = LogitsReturned::None;
  const auto input = tokens.to(model.device());
  const auto start = std::chrono::steady_clock::now();
  model.forward(input, none, {}, options);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace poslens
