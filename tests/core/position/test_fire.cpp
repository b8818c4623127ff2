// FIRE biases with a hand-set MLP against values computed by hand (docs/formulas.md §2 "FIRE").
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <cmath>

#include "core/base/error.h"
#include "core/position/fire.h"

namespace poslens {
namespace {

// A 1 -> 32 -> 2 MLP: unit 0 = relu(x), unit 1 = relu(-x) (always 0: x >= 0), unit 2 = relu(0.25);
// head 0 = unit 0 = x; head 1 = -2·unit0 + 3·unit1 + 4·unit2 + 0.5 = -2x + 1.5.
FireParams hand_params(double c, double l_thr) {
  FireParams p;
  p.w1 = torch::zeros({32, 1});
  p.w1[0][0] = 1.0;
  p.w1[1][0] = -1.0;
  p.b1 = torch::zeros({32});
  p.b1[2] = 0.25;
  p.w2 = torch::zeros({2, 32});
  p.w2[0][0] = 1.0;
  p.w2[1][0] = -2.0;
  p.w2[1][1] = 3.0;
  p.w2[1][2] = 4.0;
  p.b2 = torch::tensor({0.0f, 0.5f});
  p.c = torch::tensor({c}, torch::kFloat32);
  p.l_thr = torch::tensor({l_thr}, torch::kFloat32);
  return p;
}

TEST(Fire, ThreeByThreeWithIdentityHeadByHand) {
  // c = 1, L_thr = 2: for i <= 2 the normalizer is psi(2) = ln 3 (+1e-6).
  // x(1,0) = x(2,1) = ln 2 / ln 3 = 0.6309, x(2,0) = ln 3 / ln 3 = 1, x(i,i) = 0.
  const auto b = fire_bias(hand_params(1.0, 2.0), 3, 3);
  ASSERT_EQ(b.sizes(), (at::IntArrayRef{2, 3, 3}));
  const double n = std::log(3.0) + 1e-6;
  const double x10 = std::log(2.0) / n, x20 = std::log(3.0) / n;
  const double x[3][3] = {{0, 0, 0}, {x10, 0, 0}, {x20, x10, 0}};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      const bool future = j > i;
      EXPECT_NEAR(b[0][i][j].item<double>(), future ? 0.0 : x[i][j], 1e-6) << i << j;
      EXPECT_NEAR(b[1][i][j].item<double>(), future ? 0.0 : -2.0 * x[i][j] + 1.5, 1e-6) << i << j;
    }
}

TEST(Fire, NormalizerUsesQueryPositionBeyondThresholdAndAbsoluteParameters) {
  // c = -0.5 -> |c| = 0.5, L_thr = -1 -> 1; one query at i = 3 against 4 keys:
  // normalizer ln(1 + 0.5·3) = ln 2.5; x(3, j) = ln(1 + 0.5 (3 - j)) / ln 2.5.
  const auto p = hand_params(-0.5, -1.0);
  const auto b = fire_bias(p, 1, 4);
  ASSERT_EQ(b.sizes(), (at::IntArrayRef{2, 1, 4}));
  const double n = std::log(2.5) + 1e-6;
  const double expected[4] = {std::log(2.5) / n, std::log(2.0) / n, std::log(1.5) / n, 0.0};
  for (int j = 0; j < 4; ++j) {
    EXPECT_NEAR(b[0][0][j].item<double>(), expected[j], 1e-6) << j;
    EXPECT_NEAR(b[1][0][j].item<double>(), -2.0 * expected[j] + 1.5, 1e-6) << j;
  }
  const auto x = fire_normalized_distance(-0.5, -1.0, 1, 4);
  EXPECT_NEAR(x[0][1].item<double>(), std::log(2.0) / n, 1e-12);
}

TEST(Fire, QueryZeroDoesNotDivideByZero) {
  // L_thr = 0, i = 0: normalizer psi(0) + eps = 1e-6; distance 0 -> x = 0.
  const auto b = fire_bias(hand_params(1.0, 0.0), 1, 1);
  EXPECT_NEAR(b[0][0][0].item<double>(), 0.0, 1e-7);
  EXPECT_NEAR(b[1][0][0].item<double>(), 1.5, 1e-6);
}

TEST(Fire, BadArgumentsThrow) {
  auto p = hand_params(1.0, 2.0);
  EXPECT_THROW(fire_bias(p, 3, 2), Error);
  p.b2 = torch::zeros({3});
  EXPECT_THROW(fire_bias(p, 2, 2), Error);
  p = hand_params(1.0, 2.0);
  p.w1 = torch::zeros({32, 2});
  EXPECT_THROW(fire_bias(p, 2, 2), Error);
  EXPECT_THROW(fire_normalized_distance(1.0, 2.0, 0, 2), Error);
}

}  // namespace
}  // namespace poslens
