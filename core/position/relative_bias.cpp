#include "core/position/relative_bias.h"

#include <torch/torch.h>

#include "core/base/error.h"

namespace poslens {

std::string describe_sharing(bool shared) { return shared ? "shared across layers" : "per layer"; }

std::pair<at::Tensor, at::Tensor> last_queries_positions(int64_t q_len, int64_t k_len) {
  return {torch::arange(k_len - q_len, k_len, torch::kLong), torch::arange(k_len, torch::kLong)};
}

void RelativeBiasEncoding::add_score_terms(const AttentionInputs& in, ScoreTerms& out) const {
  const auto b = bias(in.layer, in.head_begin, in.heads(), in.q_pos, in.k_pos);
  ScoreTerms::add(out.position, b.to(in.q_pos.device(), torch::kFloat32).unsqueeze(0));
}

at::Tensor RelativeBiasEncoding::static_position_scores(int layer, int64_t T) const {
  const auto positions = torch::arange(T, torch::kLong);
  return bias(layer, 0, -1, positions, positions);
}

}  // namespace poslens
