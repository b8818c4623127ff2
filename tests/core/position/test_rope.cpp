// RoPE in both pairing conventions against rotations computed by hand (docs/formulas.md §2).
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <cmath>

#include "core/base/error.h"
#include "core/models/hf_writer.h"
#include "core/position/rope.h"
#include "core/position/rope_scaling.h"

namespace poslens {
namespace {

// x = [1, 2, 3, 4] at positions 0 and 1; rope_theta = 100 so theta_0 = 1, theta_1 = 0.1.
at::Tensor two_positions() {
  return torch::tensor({1.f, 2.f, 3.f, 4.f, 1.f, 2.f, 3.f, 4.f}).view({1, 2, 1, 4});
}

TEST(Rope, FrequenciesFollowBasePowerMinusTwoCOverD) {
  const auto f = rope_frequencies(10000.0, 8);
  ASSERT_EQ(f.size(0), 4);
  for (int c = 0; c < 4; ++c) EXPECT_NEAR(f[c].item<double>(), std::pow(10000.0, -2.0 * c / 8), 1e-12);
}

TEST(Rope, InterleavedPairsRotateAdjacentDimensions) {
  const auto pos = torch::arange(2, torch::kLong);
  const auto out = reference::apply_rope(two_positions(), pos, 100.0, 4, RopePairing::Interleaved);
  const double c1 = std::cos(1.0), s1 = std::sin(1.0), c2 = std::cos(0.1), s2 = std::sin(0.1);
  const std::vector<double> expected{1 * c1 - 2 * s1, 1 * s1 + 2 * c1, 3 * c2 - 4 * s2,
                                     3 * s2 + 4 * c2};
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(out[0][0][0][i].item<double>(), i + 1.0, 1e-6) << "position 0 is not rotated";
    EXPECT_NEAR(out[0][1][0][i].item<double>(), expected[i], 1e-6) << "dim " << i;
  }
}

TEST(Rope, HalfSplitPairsRotateDimensionCWithCPlusHalf) {
  const auto pos = torch::arange(2, torch::kLong);
  const auto out = reference::apply_rope(two_positions(), pos, 100.0, 4, RopePairing::HalfSplit);
  const double c1 = std::cos(1.0), s1 = std::sin(1.0), c2 = std::cos(0.1), s2 = std::sin(0.1);
  // pairs (0, 2) at theta_0 = 1 and (1, 3) at theta_1 = 0.1
  const std::vector<double> expected{1 * c1 - 3 * s1, 2 * c2 - 4 * s2, 3 * c1 + 1 * s1,
                                     4 * c2 + 2 * s2};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(out[0][1][0][i].item<double>(), expected[i], 1e-6);
}

// The rotation as x·[cos, cos] + swap(x)·[−sin, sin] must give the bits of rotating the pair
// members apart (a·cos − b·sin, b·cos + a·sin, float32), and its gradient theirs.
TEST(Rope, RotationEqualsThePairFormulaBitForBitWithItsGradient) {
  torch::manual_seed(3);
  const int64_t half = 8;
  const auto positions = torch::arange(5, 40, torch::kLong);
  const auto inv_freq = rope_frequencies(10000.0, 2 * half);
  const auto angles = positions.to(torch::kFloat64).unsqueeze(1) * inv_freq;
  const auto cos = angles.cos().to(torch::kFloat32).view({1, -1, 1, half});
  const auto sin = angles.sin().to(torch::kFloat32).view({1, -1, 1, half});
  for (const auto pairing : {RopePairing::HalfSplit, RopePairing::Interleaved}) {
    const auto x = torch::randn({2, 35, 3, 2 * half}).requires_grad_(true);
    const auto out = apply_rotation(x, positions, inv_freq, pairing);
    const auto x2 = x.detach().clone().requires_grad_(true);
    at::Tensor a, b;
    if (pairing == RopePairing::HalfSplit) {
      a = x2.narrow(3, 0, half), b = x2.narrow(3, half, half);
    } else {
      a = x2.reshape({2, 35, 3, half, 2}).select(4, 0), b = x2.reshape({2, 35, 3, half, 2}).select(4, 1);
    }
    const auto out_a = a * cos - b * sin, out_b = b * cos + a * sin;
    const auto expected = pairing == RopePairing::HalfSplit ? torch::cat({out_a, out_b}, 3)
                                                            : torch::stack({out_a, out_b}, 4).flatten(3);
    EXPECT_TRUE(torch::equal(out, expected)) << to_string(pairing);
    const auto upstream = torch::randn_like(expected);
    (out * upstream).sum().backward();
    (expected * upstream).sum().backward();
    EXPECT_TRUE(torch::allclose(x.grad(), x2.grad(), 1e-6, 1e-6)) << to_string(pairing);
  }
}

TEST(Rope, PartialRotaryLeavesTheTailUnchanged) {
  const auto x = torch::tensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}).view({1, 1, 1, 6});
  const auto pos = torch::tensor({3}, torch::kLong);
  const auto out = reference::apply_rope(x, pos, 100.0, 4, RopePairing::HalfSplit);
  EXPECT_FLOAT_EQ(out[0][0][0][4].item<float>(), 5.f);
  EXPECT_FLOAT_EQ(out[0][0][0][5].item<float>(), 6.f);
  // Frequencies spread over rotary_dim: theta_1 = 100^(-2/4) = 0.1, angle 0.3 at position 3.
  EXPECT_NEAR(out[0][0][0][1].item<double>(), 2 * std::cos(0.3) - 4 * std::sin(0.3), 1e-6);
}

TEST(Rope, DotProductDependsOnlyOnRelativePosition) {
  torch::manual_seed(0);
  const auto q = torch::randn({1, 1, 1, 8}).expand({1, 20, 1, 8}).contiguous();
  const auto k = torch::randn({1, 1, 1, 8}).expand({1, 20, 1, 8}).contiguous();
  const auto pos = torch::arange(20, torch::kLong);
  for (auto pairing : {RopePairing::Interleaved, RopePairing::HalfSplit}) {
    const auto rq = reference::apply_rope(q, pos, 10000.0, 8, pairing)[0].select(1, 0);
    const auto rk = reference::apply_rope(k, pos, 10000.0, 8, pairing)[0].select(1, 0);
    const double d1 = rq[7].dot(rk[4]).item<double>(), d2 = rq[15].dot(rk[12]).item<double>();
    EXPECT_NEAR(d1, d2, 1e-4);
  }
}

TEST(Rope, HfPermutationMapsInterleavedToHalfSplit) {
  // Rotating W x with interleaved pairs equals rotating (P W) x with half-split pairs, permuted.
  torch::manual_seed(1);
  const int64_t heads = 2, d = 8;
  const auto w = torch::randn({heads * d, 5});
  const auto x = torch::randn({5});
  const auto pos = torch::arange(6, torch::kLong);
  auto project = [&](const at::Tensor& m) {
    return torch::matmul(m, x).view({1, 1, heads, d}).expand({1, 6, heads, d}).contiguous();
  };
  const auto a = reference::apply_rope(project(w), pos, 10000.0, d, RopePairing::Interleaved);
  const auto b = reference::apply_rope(project(permute_interleaved_to_half_split(w, heads)), pos, 10000.0, d,
                            RopePairing::HalfSplit);
  // Same vector up to the per-head reordering: compare via the same permutation of a.
  const auto a_rows = a.reshape({6, heads * d}).t();
  const auto a_perm = permute_interleaved_to_half_split(a_rows, heads).t();
  EXPECT_TRUE(torch::allclose(a_perm, b.reshape({6, heads * d}), 1e-5, 1e-5));
}

TEST(Rope, RejectsBadArguments) {
  const auto x = torch::zeros({1, 2, 1, 4});
  const auto pos = torch::arange(2, torch::kLong);
  EXPECT_THROW(reference::apply_rope(x, pos, 1e4, 3, RopePairing::Interleaved), Error);
  EXPECT_THROW(reference::apply_rope(x, pos, 1e4, 6, RopePairing::Interleaved), Error);
  EXPECT_THROW(reference::apply_rope(x, torch::arange(3, torch::kLong), 1e4, 4, RopePairing::Interleaved), Error);
  EXPECT_THROW(reference::apply_rope(torch::zeros({2, 4}), pos, 1e4, 4, RopePairing::Interleaved), Error);
}

}  // namespace
}  // namespace poslens
