#include "core/pe_bias.h"

#include <torch/torch.h>

#include "core/alibi.h"
#include "core/error.h"
#include "core/t5_bias.h"

namespace poslens {
namespace {

/// A causal bias b[h, i, j] (0 for j > i) made symmetric: b[h, i, j] for j <= i, b[h, j, i]
/// for j > i — the bias of |i - j| when b depends on the distance only.
at::Tensor symmetric(const at::Tensor& causal_bias) {
  return causal_bias + causal_bias.transpose(-1, -2).triu(1);
}

std::string sharing(bool shared) { return shared ? "shared across layers" : "per layer"; }

}  // namespace

void RelativeBiasEncoding::add_score_terms(const AttentionInputs& in, ScoreTerms& out) const {
  const int64_t T = in.qk.size(-1);
  ScoreTerms::add(out.position, bias(in.layer, T).to(in.qk.device(), torch::kFloat32).unsqueeze(0));
}

AlibiEncoding::AlibiEncoding(int64_t n_heads, bool causal)
    : slopes_(alibi_slopes(n_heads)), causal_(causal) {}

std::string AlibiEncoding::describe() const {
  return "ALiBi (" + std::to_string(slopes_.size()) + " heads" +
         (causal_ ? "" : ", symmetric |i-j|") + ")";
}

at::Tensor AlibiEncoding::bias(int layer, int64_t T) const {
  (void)layer;
  const auto b = alibi_bias(slopes_, T, T);
  return causal_ ? b : symmetric(b);
}

T5BiasEncoding::T5BiasEncoding(std::vector<at::Tensor> tables, bool bidirectional,
                               int64_t num_buckets, int64_t max_distance, bool shared)
    : tables_(std::move(tables)),
      bidirectional_(bidirectional),
      num_buckets_(num_buckets),
      max_distance_(max_distance),
      shared_(shared) {
  // Validates the bucket arguments once.
  t5_relative_position_bucket(torch::zeros({1}, torch::kLong), bidirectional_, num_buckets_,
                              max_distance_);
}

std::string T5BiasEncoding::describe() const {
  return "T5 bucket bias (" + std::to_string(num_buckets_) + " buckets, max_distance=" +
         std::to_string(max_distance_) + (bidirectional_ ? ", bidirectional" : ", causal") + ", " +
         sharing(shared_) + ")";
}

at::Tensor T5BiasEncoding::bias(int layer, int64_t T) const {
  return t5_bias(tables_.at(static_cast<size_t>(layer)).to(torch::kFloat32), T, T, bidirectional_,
                 num_buckets_, max_distance_);
}

KerpleEncoding::KerpleEncoding(KerpleVariant variant, std::vector<at::Tensor> p,
                               std::vector<at::Tensor> a, bool causal, bool shared)
    : variant_(variant), p_(std::move(p)), a_(std::move(a)), causal_(causal), shared_(shared) {}

std::string KerpleEncoding::describe() const {
  return "KERPLE (" + to_string(variant_) + ", " + sharing(shared_) + ")";
}

at::Tensor KerpleEncoding::bias(int layer, int64_t T) const {
  const auto l = static_cast<size_t>(layer);
  const auto b = kerple_bias(variant_, p_.at(l).to(torch::kFloat32), a_.at(l).to(torch::kFloat32), T, T);
  return causal_ ? b : symmetric(b);
}

FireEncoding::FireEncoding(std::vector<FireParams> params, bool shared)
    : params_(std::move(params)), shared_(shared) {}

std::string FireEncoding::describe() const {
  return "FIRE (MLP width " + std::to_string(params_.front().w1.size(0)) + ", " + sharing(shared_) + ")";
}

at::Tensor FireEncoding::bias(int layer, int64_t T) const {
  return fire_bias(params_.at(static_cast<size_t>(layer)), T, T);
}

}  // namespace poslens
