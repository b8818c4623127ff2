// KERPLE log and power biases against values computed by hand (docs/formulas.md §2 "KERPLE").
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <cmath>

#include "core/base/error.h"
#include "core/position/kerple.h"

namespace poslens {
namespace {

void expect_3x3(const at::Tensor& b, const double (&expected)[2][3][3]) {
  ASSERT_EQ(b.sizes(), (at::IntArrayRef{2, 3, 3}));
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        EXPECT_NEAR(b[h][i][j].item<double>(), expected[h][i][j], 1e-6) << h << i << j;
}

TEST(Kerple, LogVariantTwoHeadsByHand) {
  // p = [1, 2], a = [1, 0.5]: head 0: -log(1 + d) -> 0, -ln 2 = -0.6931472, -ln 3 = -1.0986123;
  // head 1: -2 log(1 + d/2) -> 0, -2 ln 1.5 = -0.8109302, -2 ln 2 = -1.3862944.
  const auto b = kerple_bias(KerpleVariant::Log, torch::tensor({1.0, 2.0}),
                             torch::tensor({1.0, 0.5}), 3, 3);
  const double l2 = -0.6931472, l3 = -1.0986123, m15 = -0.8109302, m2 = -1.3862944;
  const double expected[2][3][3] = {{{0, 0, 0}, {l2, 0, 0}, {l3, l2, 0}},
                                    {{0, 0, 0}, {m15, 0, 0}, {m2, m15, 0}}};
  expect_3x3(b, expected);
}

TEST(Kerple, PowerVariantTwoHeadsByHand) {
  // a = [1, 0.5], p = [1, 2]: head 0: -d -> 0, -1, -2; head 1: -0.5 d^2 -> 0, -0.5, -2.
  const auto b = kerple_bias(KerpleVariant::Power, torch::tensor({1.0, 2.0}),
                             torch::tensor({1.0, 0.5}), 3, 3);
  const double expected[2][3][3] = {{{0, 0, 0}, {-1, 0, 0}, {-2, -1, 0}},
                                    {{0, 0, 0}, {-0.5, 0, 0}, {-2, -0.5, 0}}};
  expect_3x3(b, expected);
}

TEST(Kerple, ParametersAreClampedToOneHundredth) {
  // p = -3 -> 0.01, a = 0 -> 0.01. Log, d = 2: -0.01 ln(1.02) = -1.98026e-4.
  // Power, d = 2: -0.01 · 2^0.01 = -0.0100696.
  const auto p = torch::tensor({-3.0});
  const auto a = torch::tensor({0.0});
  const auto lg = kerple_bias(KerpleVariant::Log, p, a, 1, 3);
  EXPECT_NEAR(lg[0][0][0].item<double>(), -1.98026e-4, 1e-9);
  const auto pw = kerple_bias(KerpleVariant::Power, p, a, 1, 3);
  EXPECT_NEAR(pw[0][0][0].item<double>(), -0.0100696, 1e-7);
  EXPECT_NEAR(pw[0][0][2].item<double>(), 0.0, 1e-12);
}

TEST(Kerple, BadArgumentsThrow) {
  EXPECT_THROW(kerple_bias(KerpleVariant::Log, torch::ones({2}), torch::ones({3}), 2, 2), Error);
  EXPECT_THROW(kerple_bias(KerpleVariant::Log, torch::ones({2, 1}), torch::ones({2, 1}), 2, 2),
               Error);
  EXPECT_THROW(kerple_bias(KerpleVariant::Power, torch::ones({2}), torch::ones({2}), 3, 2), Error);
}

}  // namespace
}  // namespace poslens
