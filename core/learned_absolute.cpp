#include "core/learned_absolute.h"

#include <torch/torch.h>

#include "core/error.h"

namespace poslens {

LearnedAbsoluteEncoding::LearnedAbsoluteEncoding(at::Tensor table) : table_(std::move(table)) {
  if (!table_.defined() || table_.dim() != 2)
    throw Error("learned absolute position embedding must be a [n_ctx, d_model] table");
}

std::string LearnedAbsoluteEncoding::describe() const {
  return "learned absolute (n_ctx=" + std::to_string(table_.size(0)) + ")";
}

InputTerm LearnedAbsoluteEncoding::input_term(const at::Tensor& tok,
                                              const at::Tensor& positions) const {
  if (positions.numel() > 0 && positions.max().item<int64_t>() >= table_.size(0))
    throw Error("sequence of " + std::to_string(positions.max().item<int64_t>() + 1) +
                " tokens is longer than the model's learned positions (n_ctx=" +
                std::to_string(table_.size(0)) + ")");
  return {table_.index_select(0, positions.to(table_.device())).unsqueeze(0).expand_as(tok), {}};
}

}  // namespace poslens
