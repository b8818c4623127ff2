#include "core/position/alibi.h"

#include <torch/torch.h>

#include <cmath>
#include <string>

#include "core/base/error.h"
#include "core/position/component_params.h"

namespace poslens {

namespace {

// m_h = 2^(-8(h+1)/n) for a power of two n: start = ratio = 2^(-8/n).
std::vector<double> power_of_two_slopes(int64_t n) {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(n));
  for (int64_t h = 0; h < n; ++h)
    out.push_back(std::pow(2.0, -8.0 * static_cast<double>(h + 1) / static_cast<double>(n)));
  return out;
}

}  // namespace

std::vector<double> alibi_slopes(int64_t n_heads) {
  if (n_heads < 1)
    throw Error("alibi_slopes: n_heads must be >= 1, got " + std::to_string(n_heads));
  int64_t closest = 1;  // 2^floor(log2 n_heads), computed in integers
  while (closest * 2 <= n_heads) closest *= 2;
  if (closest == n_heads) return power_of_two_slopes(n_heads);
  std::vector<double> out = power_of_two_slopes(closest);
  const std::vector<double> doubled = power_of_two_slopes(2 * closest);
  for (size_t k = 0; static_cast<int64_t>(out.size()) < n_heads; k += 2) out.push_back(doubled[k]);
  return out;
}

std::vector<double> alibi_slopes_mpt(int64_t n_heads, double bias_max) {
  if (n_heads < 1)
    throw Error("alibi_slopes_mpt: n_heads must be >= 1, got " + std::to_string(n_heads));
  if (!(bias_max > 0))
    throw Error("alibi_slopes_mpt: alibi_bias_max must be > 0, got " + std::to_string(bias_max));
  int64_t padded = 1;  // 2^ceil(log2 n_heads)
  while (padded < n_heads) padded *= 2;
  std::vector<double> m;
  for (int64_t k = 1; k <= padded; ++k)
    m.push_back(std::pow(2.0, -bias_max * static_cast<double>(k) / static_cast<double>(padded)));
  if (padded == n_heads) return m;
  std::vector<double> out;
  for (size_t k = 1; k < m.size(); k += 2) out.push_back(m[k]);
  for (size_t k = 0; k < m.size(); k += 2) out.push_back(m[k]);
  out.resize(static_cast<size_t>(n_heads));
  return out;
}

at::Tensor alibi_bias(const std::vector<double>& slopes, int64_t q_len, int64_t k_len) {
  if (q_len < 1 || k_len < 1 || q_len > k_len)
    throw Error("alibi_bias: need 1 <= q_len <= k_len, got q_len=" + std::to_string(q_len) +
                ", k_len=" + std::to_string(k_len));
  const auto [i, j] = last_queries_positions(q_len, k_len);
  return alibi_bias(slopes, i, j);
}

at::Tensor alibi_bias(const std::vector<double>& slopes, const at::Tensor& i, const at::Tensor& j,
                      bool symmetric) {
  if (slopes.empty()) throw Error("alibi_bias: no slopes (n_heads must be >= 1)");
  const auto opts = torch::TensorOptions().dtype(torch::kFloat64).device(i.device());
  const auto d = i.to(opts).unsqueeze(1) - j.to(opts).unsqueeze(0);  // [q, k]
  const auto distance = symmetric ? d.abs() : d.clamp_min(0.0);     // 0 where j > i (causal)
  const auto m = torch::tensor(slopes, torch::kFloat64).to(i.device()).view({-1, 1, 1});
  return (-m * distance.unsqueeze(0)).to(torch::kFloat32);
}

AlibiEncoding::AlibiEncoding(std::vector<double> slopes, bool causal)
    : slopes_(std::move(slopes)), causal_(causal) {
  if (slopes_.empty()) throw Error("ALiBi needs one slope per head (got none)");
}

std::string AlibiEncoding::describe() const {
  return "ALiBi (" + std::to_string(slopes_.size()) + " heads" +
         (causal_ ? "" : ", symmetric |i-j|") + ")";
}

at::Tensor AlibiEncoding::bias(int layer, int64_t head_begin, int64_t n_heads,
                               const at::Tensor& i, const at::Tensor& j) const {
  (void)layer;
  const auto first = slopes_.begin() + head_begin;
  const std::vector<double> heads(first, n_heads < 0 ? slopes_.end() : first + n_heads);
  return alibi_bias(heads, i, j, /*symmetric=*/!causal_);
}

ComponentRecipe alibi_recipe(const PositionComponentSpec& spec, const PositionContext& c) {
  // "slopes": "press" (the reference's, BLOOM's) or "mpt" with its "alibi_bias_max" (MPT).
  const ComponentParams p(spec, {"slopes", "alibi_bias_max"});
  const bool mpt = p.choice("slopes", {"press", "mpt"}) == "mpt";
  const double bias_max = p.number("alibi_bias_max", 8.0);
  if (!mpt && p.raw().contains("alibi_bias_max"))
    throw Error(p.where() + ": \"alibi_bias_max\" applies to \"slopes\": \"mpt\" only");
  if (!(bias_max > 0)) throw Error(p.where() + ": \"alibi_bias_max\" must be > 0");
  const auto slopes = mpt ? alibi_slopes_mpt(c.n_heads, bias_max) : alibi_slopes(c.n_heads);
  const bool causal = c.causal;
  return {{}, [=](const PositionWeights&) { return std::make_unique<AlibiEncoding>(slopes, causal); }};
}

}  // namespace poslens
