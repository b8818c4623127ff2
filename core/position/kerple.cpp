#include "core/position/kerple.h"

#include <torch/torch.h>

#include "core/base/error.h"
#include "core/position/component_params.h"

namespace poslens {

std::string to_string(KerpleVariant variant) {
  return variant == KerpleVariant::Log ? "log" : "power";
}

at::Tensor kerple_bias(KerpleVariant variant, const at::Tensor& p, const at::Tensor& a,
                       int64_t q_len, int64_t k_len) {
  if (q_len < 1 || k_len < 1 || q_len > k_len)
    throw Error("kerple_bias: need 1 <= q_len <= k_len, got q_len=" + std::to_string(q_len) +
                ", k_len=" + std::to_string(k_len));
  const auto [i, j] = last_queries_positions(q_len, k_len);
  return kerple_bias(variant, p, a, i, j);
}

at::Tensor kerple_bias(KerpleVariant variant, const at::Tensor& p, const at::Tensor& a,
                       const at::Tensor& i, const at::Tensor& j, bool symmetric) {
  if (!p.defined() || !a.defined() || p.dim() != 1 || a.dim() != 1 || p.size(0) < 1 ||
      p.size(0) != a.size(0))
    throw Error("kerple_bias: p and a must both be [n_heads] with n_heads >= 1");
  const auto opts = torch::TensorOptions().dtype(torch::kFloat64).device(p.device());
  const auto d = i.to(opts).unsqueeze(1) - j.to(opts).unsqueeze(0);
  const auto distance = (symmetric ? d.abs() : d.clamp_min(0.0)).unsqueeze(0);  // [1, q, k]
  const auto pp = p.to(opts).clamp_min(1e-2).view({-1, 1, 1});
  const auto aa = a.to(opts).clamp_min(1e-2).view({-1, 1, 1});
  const auto bias = variant == KerpleVariant::Log ? -pp * torch::log1p(aa * distance)
                                                  : -aa * torch::pow(distance, pp);
  return bias.to(torch::kFloat32);
}

KerpleEncoding::KerpleEncoding(KerpleVariant variant, std::vector<at::Tensor> p,
                               std::vector<at::Tensor> a, bool causal, bool shared)
    : variant_(variant), p_(std::move(p)), a_(std::move(a)), causal_(causal), shared_(shared) {}

std::string KerpleEncoding::describe() const {
  return "KERPLE (" + to_string(variant_) + ", " + describe_sharing(shared_) + ")";
}

at::Tensor KerpleEncoding::bias(int layer, int64_t head_begin, int64_t n_heads,
                                const at::Tensor& i, const at::Tensor& j) const {
  const auto l = static_cast<size_t>(layer);
  auto p = p_.at(l), a = a_.at(l);
  if (n_heads >= 0) {
    p = p.narrow(0, head_begin, n_heads);
    a = a.narrow(0, head_begin, n_heads);
  }
  return kerple_bias(variant_, p.to(i.device(), torch::kFloat32), a.to(i.device(), torch::kFloat32),
                     i, j, /*symmetric=*/!causal_);
}

ComponentRecipe kerple_recipe(const PositionComponentSpec& spec, const PositionContext& c) {
  const ComponentParams p(spec, {"variant", "shared"});
  const auto variant = p.choice("variant", {"log", "power"}) == "log" ? KerpleVariant::Log
                                                                     : KerpleVariant::Power;
  const bool shared = p.flag("shared", false), causal = c.causal;
  // Init: p ~ U(0, 2) and a ~ U(0, 1), chijames/KERPLE's get_parameter(scale, 'uniform').
  return {{{"kerple_p", {c.n_heads}, !shared, false, {WeightInit::Kind::Uniform, 0.0, 2.0}},
           {"kerple_a", {c.n_heads}, !shared, false, {WeightInit::Kind::Uniform, 0.0, 1.0}}},
          [=](const PositionWeights& w) {
            return std::make_unique<KerpleEncoding>(variant, w.per_layer("kerple_p", shared),
                                                    w.per_layer("kerple_a", shared), causal, shared);
          }};
}

}  // namespace poslens
