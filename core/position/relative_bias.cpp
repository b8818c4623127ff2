#include "core/position/relative_bias.h"

#include <torch/torch.h>

#include "core/base/error.h"

namespace poslens {

/// A causal bias b[h, i, j] (0 for j > i) made symmetric: b[h, i, j] for j <= i, b[h, j, i]
/// for j > i — the bias of |i - j| when b depends on the distance only.
at::Tensor symmetric_bias(const at::Tensor& causal_bias) {
  return causal_bias + causal_bias.transpose(-1, -2).triu(1);
}

std::string describe_sharing(bool shared) { return shared ? "shared across layers" : "per layer"; }

void RelativeBiasEncoding::add_score_terms(const AttentionInputs& in, ScoreTerms& out) const {
  const int64_t T = in.qk.size(-1);
  ScoreTerms::add(out.position, bias(in.layer, T).to(in.qk.device(), torch::kFloat32).unsqueeze(0));
}

}  // namespace poslens
