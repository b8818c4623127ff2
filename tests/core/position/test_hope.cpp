// HoPE: the split index and the partial rotation, against hand values and RoPE (docs/formulas.md §2).
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <cmath>

#include "core/base/error.h"
#include "core/position/hope.h"
#include "core/position/rope.h"

namespace poslens {
namespace {

TEST(Hope, SeedExampleKeepsSixteenComponents) {
  // theta_c = 1e4^(-c/32) >= 2 pi/512 = 0.0122718 <=> c <= 8·log10(1/0.0122718) = 15.29:
  // c = 0..15 -> 16 (the seed's / SPEC's number).
  EXPECT_EQ(hope_kept_components(1e4, 64, 512), 16);
}

TEST(Hope, SmallExamplesByHand) {
  // d = 8, base 100: theta = 1, 0.3162, 0.1, 0.03162.
  // L = 20: 2 pi/20 = 0.31416 -> 1 and 0.3162 kept -> 2.
  EXPECT_EQ(hope_kept_components(100.0, 8, 20), 2);
  // L = 6: 2 pi/6 = 1.047 > 1 -> nothing kept (NoPE-like).
  EXPECT_EQ(hope_kept_components(100.0, 8, 6), 0);
  // L = 1000: 0.00628 -> all 4 kept (plain RoPE).
  EXPECT_EQ(hope_kept_components(100.0, 8, 1000), 4);
}

at::Tensor sample_x() {
  torch::manual_seed(3);
  return torch::randn({2, 3, 2, 8});
}

TEST(Hope, InterleavedRotatesTheFirstTwoADimsAsRopeAndKeepsTheRest) {
  const auto x = sample_x();
  const auto pos = torch::arange(3, torch::kLong);
  const auto hope = apply_hope(x, pos, 100.0, 20, RopePairing::Interleaved);  // a = 2
  const auto rope = reference::apply_rope(x, pos, 100.0, 8, RopePairing::Interleaved);
  ASSERT_EQ(hope.sizes(), x.sizes());
  EXPECT_TRUE(torch::allclose(hope.narrow(3, 0, 4), rope.narrow(3, 0, 4), 1e-6, 1e-6));
  EXPECT_TRUE(torch::equal(hope.narrow(3, 4, 4), x.narrow(3, 4, 4)));
}

TEST(Hope, HalfSplitRotatesPairsCAndCPlusHalfForKeptC) {
  const auto x = sample_x();
  const auto pos = torch::arange(3, torch::kLong);
  const auto hope = apply_hope(x, pos, 100.0, 20, RopePairing::HalfSplit);  // a = 2
  const auto rope = reference::apply_rope(x, pos, 100.0, 8, RopePairing::HalfSplit);
  for (int64_t dim : {0, 1, 4, 5})
    EXPECT_TRUE(torch::allclose(hope.select(3, dim), rope.select(3, dim), 1e-6, 1e-6)) << dim;
  for (int64_t dim : {2, 3, 6, 7})
    EXPECT_TRUE(torch::equal(hope.select(3, dim), x.select(3, dim))) << dim;
}

TEST(Hope, RotationByHand) {
  // x = 1..8 at position 1, d = 8, base 100, L = 20 (a = 2), interleaved:
  // pair 0 by 1 rad, pair 1 by 0.1^(1/2) = 0.31623 rad, pairs 2, 3 unchanged.
  const auto x = torch::arange(1, 9, torch::kFloat32).view({1, 1, 1, 8});
  const auto out = apply_hope(x, torch::tensor({1}, torch::kLong), 100.0, 20,
                              RopePairing::Interleaved);
  const double t1 = std::sqrt(0.1);
  const double expected[8] = {1 * std::cos(1.0) - 2 * std::sin(1.0),
                              1 * std::sin(1.0) + 2 * std::cos(1.0),
                              3 * std::cos(t1) - 4 * std::sin(t1),
                              3 * std::sin(t1) + 4 * std::cos(t1),
                              5, 6, 7, 8};
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(out[0][0][0][i].item<double>(), expected[i], 1e-5) << i;
}

TEST(Hope, BadArgumentsThrow) {
  EXPECT_THROW(hope_kept_components(1e4, 63, 512), Error);
  EXPECT_THROW(hope_kept_components(1e4, 64, 0), Error);
  EXPECT_THROW(apply_hope(torch::zeros({3, 8}), torch::arange(3), 1e4, 512, RopePairing::HalfSplit),
               Error);
  EXPECT_THROW(apply_hope(torch::zeros({1, 3, 1, 8}), torch::arange(2), 1e4, 512,
                          RopePairing::HalfSplit),
               Error);
}

}  // namespace
}  // namespace poslens
