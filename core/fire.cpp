#include "core/fire.h"

#include <torch/torch.h>

#include <cmath>
#include <string>

#include "core/error.h"

namespace poslens {

namespace {

void check_lengths(const char* who, int64_t q_len, int64_t k_len) {
  if (q_len < 1 || k_len < 1 || q_len > k_len)
    throw Error(std::string(who) + ": need 1 <= q_len <= k_len, got q_len=" +
                std::to_string(q_len) + ", k_len=" + std::to_string(k_len));
}

}  // namespace

at::Tensor fire_normalized_distance(double c, double l_thr, int64_t q_len, int64_t k_len) {
  check_lengths("fire_normalized_distance", q_len, k_len);
  const double abs_c = std::abs(c);
  const auto i = torch::arange(k_len - q_len, k_len, torch::kFloat64).unsqueeze(1);  // [q, 1]
  const auto j = torch::arange(0, k_len, torch::kFloat64).unsqueeze(0);              // [1, k]
  const auto distance = (i - j).clamp_min(0.0);  // 0 where j > i
  const auto psi_distance = torch::log1p(abs_c * distance);
  const auto normalizer = torch::log1p(abs_c * i.clamp_min(std::abs(l_thr))) + kFireEps;
  return psi_distance / normalizer;
}

at::Tensor fire_bias(const FireParams& params, int64_t q_len, int64_t k_len) {
  const auto& w1 = params.w1;
  const auto& b1 = params.b1;
  const auto& w2 = params.w2;
  const auto& b2 = params.b2;
  if (!w1.defined() || !b1.defined() || !w2.defined() || !b2.defined())
    throw Error("fire_bias: missing MLP weights");
  if (w1.dim() != 2 || w1.size(1) != 1 || w1.size(0) < 1)
    throw Error("fire_bias: w1 must be [hidden, 1]");
  const int64_t hidden = w1.size(0);
  if (b1.dim() != 1 || b1.size(0) != hidden)
    throw Error("fire_bias: b1 must be [hidden=" + std::to_string(hidden) + "]");
  if (w2.dim() != 2 || w2.size(1) != hidden || w2.size(0) < 1)
    throw Error("fire_bias: w2 must be [n_heads, hidden=" + std::to_string(hidden) + "]");
  if (b2.dim() != 1 || b2.size(0) != w2.size(0))
    throw Error("fire_bias: b2 must be [n_heads=" + std::to_string(w2.size(0)) + "]");
  check_lengths("fire_bias", q_len, k_len);

  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(w1.device());
  const auto x = fire_normalized_distance(params.c, params.l_thr, q_len, k_len)
                     .to(f32)
                     .unsqueeze(-1);                                        // [q, k, 1]
  const auto h = torch::relu(torch::linear(x, w1.to(f32), b1.to(f32)));    // [q, k, hidden]
  const auto out = torch::linear(h, w2.to(f32), b2.to(f32));               // [q, k, H]
  // Future keys: 0 (see the header).
  const auto future = (torch::arange(k_len - q_len, k_len, f32).unsqueeze(1) <
                       torch::arange(0, k_len, f32).unsqueeze(0))
                          .unsqueeze(-1);
  return out.masked_fill(future, 0.0).permute({2, 0, 1}).contiguous();
}

}  // namespace poslens
