// The fused CoPE pass (core/position/cope_interpolate.h) against the composite form of the
// reference implementation (flip-cumsum-flip, clamp, gathers), values and gradients.
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/base/error.h"
#include "core/position/cope_interpolate.h"

namespace poslens {
namespace {

struct Case {
  const char* name;
  int64_t queries, keys, npos;
  int window;  ///< -1: no mask; 0: causal; > 0: causal sliding window of that many keys
  double z_scale;
};

at::Tensor mask_for(const Case& c) {
  if (c.window < 0) return {};
  const auto i = torch::arange(c.queries).unsqueeze(1) + (c.keys - c.queries);
  const auto j = torch::arange(c.keys).unsqueeze(0);
  auto allowed = j <= i;
  if (c.window > 0) allowed = allowed & ((i - j) < c.window);
  return allowed;
}

/// Gates as the runtime makes them: sigmoids, 0 where masked.
at::Tensor gates_for(const Case& c, const at::Tensor& allowed, torch::Dtype dtype) {
  auto g = torch::sigmoid(torch::randn({2, 3, c.queries, c.keys}, dtype) * 2);
  return allowed.defined() ? g.masked_fill(allowed.logical_not(), 0) : g;
}

const Case kCases[] = {
    {"causal, positions below npos_max", 17, 17, 64, 0, 0.25},
    {"causal, clamped at npos_max - 1", 40, 40, 6, 0, 0.25},
    {"no mask (encoder)", 9, 13, 16, -1, 1.0},
    {"sliding window of 5, one block of 7 rows of 20 keys", 7, 20, 8, 5, 0.5},
};

TEST(CopeInterpolate, Float32ValuesAreTheCompositeFormsBits) {
  torch::manual_seed(11);
  for (const auto& c : kCases) {
    const auto allowed = mask_for(c);
    const auto gates = gates_for(c, allowed, torch::kFloat32);
    const auto z_int = torch::randn({2, 3, c.queries, c.npos});
    const auto [z, positions] = cope_interpolate(gates, z_int, allowed, c.z_scale);
    const auto [z_ref, positions_ref] = reference::cope_interpolate(gates, z_int, allowed, c.z_scale);
    EXPECT_TRUE(torch::equal(positions, positions_ref)) << c.name;
    EXPECT_TRUE(torch::equal(z, z_ref)) << c.name << ": max difference "
                                        << (z - z_ref).abs().max().item<double>();
    if (c.npos == 6) {
      EXPECT_EQ(positions.max().item<double>(), 5.0) << "the clamp was reached";
    }
  }
}

TEST(CopeInterpolate, GradientsAreTheCompositeForms) {
  torch::manual_seed(12);
  for (const auto& c : kCases) {
    const auto allowed = mask_for(c);
    const auto gates = gates_for(c, allowed, torch::kFloat64);
    const auto z_int = torch::randn({2, 3, c.queries, c.npos}, torch::kFloat64);
    const auto up_z = torch::randn_like(gates), up_p = torch::randn_like(gates);
    std::vector<at::Tensor> grads[2];
    for (int fused = 0; fused < 2; ++fused) {
      const auto g = gates.clone().requires_grad_(true), zi = z_int.clone().requires_grad_(true);
      const auto [z, p] = fused ? cope_interpolate(g, zi, allowed, c.z_scale)
                                : reference::cope_interpolate(g, zi, allowed, c.z_scale);
      // Both outputs reach the loss: positions carry a gradient in CoPE_ALiBi.
      ((z * up_z).sum() + (p * up_p).sum()).backward();
      grads[fused] = {g.grad(), zi.grad()};
    }
    EXPECT_TRUE(torch::allclose(grads[1][0], grads[0][0], 1e-10, 1e-10)) << c.name << ": gates";
    EXPECT_TRUE(torch::allclose(grads[1][1], grads[0][1], 1e-10, 1e-10)) << c.name << ": z_int";
  }
}

TEST(CopeInterpolate, AnUnusedOutputNeedsNoGradient) {
  torch::manual_seed(13);
  const Case c = kCases[0];
  const auto allowed = mask_for(c);
  const auto g = gates_for(c, allowed, torch::kFloat32).requires_grad_(true);
  const auto zi = torch::randn({2, 3, c.queries, c.npos}).requires_grad_(true);
  const auto [z, p] = cope_interpolate(g, zi, allowed, c.z_scale);
  z.sum().backward();  // positions unused: the backward gets no gradient for them
  const auto g2 = g.detach().clone().requires_grad_(true), zi2 = zi.detach().clone().requires_grad_(true);
  reference::cope_interpolate(g2, zi2, allowed, c.z_scale).first.sum().backward();
  EXPECT_TRUE(torch::allclose(g.grad(), g2.grad(), 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(zi.grad(), zi2.grad(), 1e-5, 1e-6));
}

TEST(CopeInterpolate, BadInputThrows) {
  const auto gates = torch::ones({1, 1, 3, 3}), z_int = torch::zeros({1, 1, 3, 4});
  EXPECT_THROW(cope_interpolate(gates, torch::zeros({1, 2, 3, 4}), {}, 1.0), Error);
  EXPECT_THROW(cope_interpolate(gates, z_int, torch::ones({3, 2}, torch::kBool), 1.0), Error);
  EXPECT_THROW(cope_interpolate(-gates, z_int, {}, 1.0), Error) << "negative positions";
  EXPECT_THROW(cope_interpolate(gates * NAN, z_int, {}, 1.0), Error) << "NaN positions";
}

}  // namespace
}  // namespace poslens
