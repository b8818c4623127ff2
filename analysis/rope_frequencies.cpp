#include "analysis/rope_frequencies.h"

#include <torch/torch.h>

#include <cmath>
#include <limits>

#include "core/base/error.h"
#include "core/base/shape_text.h"

namespace poslens {

std::pair<at::Tensor, at::Tensor> rotary_pair_dims(RopePairing pairing, int64_t rotary_dim) {
  if (rotary_dim < 2 || rotary_dim % 2)
    throw Error("rotary_dim must be even and at least 2, got " + std::to_string(rotary_dim));
  const int64_t C = rotary_dim / 2;
  const auto c = torch::arange(C, torch::kLong);
  if (pairing == RopePairing::Interleaved) return {c * 2, c * 2 + 1};
  return {c, c + C};
}

at::Tensor effective_theta(const RotaryInfo& info) {
  auto theta = info.theta.to(torch::kCPU, torch::kDouble).clone();
  if (info.kept_components < theta.size(0))
    theta.slice(0, std::max<int64_t>(info.kept_components, 0)).zero_();
  return theta;
}

RotaryScoreParts decompose_rotary_scores(const at::Tensor& q, const at::Tensor& k,
                                         const at::Tensor& q_positions,
                                         const at::Tensor& k_positions, const RotaryInfo& info,
                                         double scale) {
  if (q.dim() != 4 || k.dim() != 4)
    throw Error("decompose_rotary_scores: q and k must be [batch, pos, head, d_head], got " +
                shape_str(q) + " and " + shape_str(k));
  const int64_t B = q.size(0), Q = q.size(1), H = q.size(2), dh = q.size(3);
  const int64_t K = k.size(1), Hkv = k.size(2);
  if (k.size(0) != B || k.size(3) != dh || dh != info.d_head)
    throw Error("decompose_rotary_scores: q " + shape_str(q) + " and k " + shape_str(k) +
                " do not match each other or d_head=" + std::to_string(info.d_head));
  if (Hkv < 1 || H % Hkv)
    throw Error("decompose_rotary_scores: " + std::to_string(Hkv) + " kv heads do not divide " +
                std::to_string(H) + " query heads");
  if (q_positions.numel() != Q || k_positions.numel() != K)
    throw Error("decompose_rotary_scores: " + std::to_string(q_positions.numel()) + " query and " +
                std::to_string(k_positions.numel()) + " key positions for " + std::to_string(Q) +
                " queries and " + std::to_string(K) + " keys");
  const int64_t rotary_dim = info.rotary_dim;
  if (rotary_dim > dh) throw Error("decompose_rotary_scores: rotary_dim exceeds d_head");
  const auto device = q.device();

  // [B, pos, H, dh] -> [B, H, pos, dh], kv heads repeated as the forward does.
  const auto qh = q.to(torch::kFloat).transpose(1, 2);
  auto kh = k.to(torch::kFloat).transpose(1, 2);
  if (Hkv != H) kh = kh.repeat_interleave(H / Hkv, 1);

  const auto [first, second] = rotary_pair_dims(info.pairing, rotary_dim);
  const auto i0 = first.to(device), i1 = second.to(device);
  // Per component: [B, H, C, pos].
  const auto q0 = qh.index_select(-1, i0).transpose(-1, -2);
  const auto q1 = qh.index_select(-1, i1).transpose(-1, -2);
  const auto k0 = kh.index_select(-1, i0).transpose(-1, -2);
  const auto k1 = kh.index_select(-1, i1).transpose(-1, -2);
  // [B, H, C, Q, K]
  const auto dot = q0.unsqueeze(-1) * k0.unsqueeze(-2) + q1.unsqueeze(-1) * k1.unsqueeze(-2);
  const auto cross = q0.unsqueeze(-1) * k1.unsqueeze(-2) - q1.unsqueeze(-1) * k0.unsqueeze(-2);

  // Angles (m − n)·θ_c in float64 [C, Q, K], then cos/sin in float32 as the runtime does.
  const auto theta = effective_theta(info).to(device);
  const auto dist = (q_positions.to(device, torch::kDouble).view({Q, 1}) -
                     k_positions.to(device, torch::kDouble).view({1, K}));
  const auto angle = theta.view({-1, 1, 1}) * dist.unsqueeze(0);
  const double factor = scale * info.attention_factor * info.attention_factor;
  RotaryScoreParts parts;
  parts.components =
      (dot * angle.cos().to(torch::kFloat) + cross * angle.sin().to(torch::kFloat)) * factor;
  if (rotary_dim < dh) {
    const auto qr = qh.slice(-1, rotary_dim), kr = kh.slice(-1, rotary_dim);
    parts.remainder = torch::matmul(qr, kr.transpose(-1, -2)) * scale;
  }
  return parts;
}

at::Tensor variance_accounted_for(const at::Tensor& y, const at::Tensor& y_c) {
  if (y.dim() < 1 || y_c.dim() < 1 || y.size(-1) != y_c.size(-1) || y.size(-1) == 0)
    throw Error("variance_accounted_for: curves of " + shape_str(y) + " and " + shape_str(y_c) +
                " must share a non-empty last dimension");
  const auto yd = y.to(torch::kDouble), cd = y_c.to(torch::kDouble);
  const auto var_y = yd.var(-1, /*unbiased=*/false);
  const auto var_residual = (yd - cd).var(-1, /*unbiased=*/false);
  auto vaf = 100.0 * (1.0 - var_residual / var_y);
  // Var(y) = 0: a flat curve has nothing to account for.
  return torch::where(var_y.expand_as(vaf) > 0, vaf,
                      torch::full_like(vaf, std::numeric_limits<double>::quiet_NaN()));
}

at::Tensor activated_components(const at::Tensor& theta, int64_t L) {
  if (L < 1) throw Error("activated_components: the training length must be positive");
  const auto t = theta.to(torch::kCPU, torch::kDouble);
  return (t > M_PI / static_cast<double>(L)) & (t < 2.0 * M_PI / static_cast<double>(L));
}

at::Tensor wavelengths(const at::Tensor& theta) {
  const auto t = theta.to(torch::kCPU, torch::kDouble);
  return torch::where(t > 0, 2.0 * M_PI / t,
                      torch::full_like(t, std::numeric_limits<double>::infinity()));
}

}  // namespace poslens
