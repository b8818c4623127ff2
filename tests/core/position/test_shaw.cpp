// Shaw relative position representations (docs/formulas.md §2) on a tiny example computed by hand.
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <algorithm>

#include "core/base/error.h"
#include "core/position/shaw.h"

namespace poslens {
namespace {

// k_max = 1, e[0] = (1, 0), e[1] = (0, 1), so q_i·e[0] = q_i[0] and q_i·e[1] = q_i[1].
// q = (1, 2), (3, 4), (5, 6). clip(i - j, 0, 1):
//   [[0 0 0]      scores [[1 1 1]     (future keys clip to row 0; the causal mask drops them)
//    [1 0 0]  ->          [4 3 3]
//    [1 1 0]]             [6 6 5]]
TEST(Shaw, KeyScoresHandExampleKMax1) {
  const auto q = torch::tensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}).view({1, 1, 3, 2});
  const auto e = torch::tensor({1.f, 0.f, 0.f, 1.f}).view({2, 2});
  const auto s = shaw_key_scores(q, e, 3);
  const float expected[3][3] = {{1, 1, 1}, {4, 3, 3}, {6, 6, 5}};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(s[0][0][i][j].item<float>(), expected[i][j]) << i << "," << j;
  const auto idx = shaw_relative_index(3, 3, 1);
  EXPECT_TRUE(torch::equal(idx, torch::tensor({0, 0, 0, 1, 0, 0, 1, 1, 0}, torch::kLong).view({3, 3})));
}

// ev[0] = 10, ev[1] = 100 (d_v = 1):
//   row 0: a = (1, 0, 0)       -> 1·10                    = 10
//   row 1: a = (0.4, 0.6, 0)   -> 0.4·100 + 0.6·10        = 46
//   row 2: a = (0.2, 0.3, 0.5) -> 0.2·100 + 0.3·100 + 0.5·10 = 55
TEST(Shaw, ValueTermHandExampleKMax1) {
  const auto a = torch::tensor({1.f, 0.f, 0.f, 0.4f, 0.6f, 0.f, 0.2f, 0.3f, 0.5f}).view({1, 1, 3, 3});
  const auto ev = torch::tensor({10.f, 100.f}).view({2, 1});
  const auto o = shaw_value_term(a, ev);
  ASSERT_EQ(o.sizes(), (std::vector<int64_t>{1, 1, 3, 1}));
  EXPECT_NEAR(o[0][0][0][0].item<double>(), 10.0, 1e-5);
  EXPECT_NEAR(o[0][0][1][0].item<double>(), 46.0, 1e-5);
  EXPECT_NEAR(o[0][0][2][0].item<double>(), 55.0, 1e-5);
}

TEST(Shaw, MatchesDirectLoopWithMemory) {
  torch::manual_seed(4);
  const int64_t B = 2, H = 2, Q = 3, K = 6, d = 3, k_max = 2;
  const auto q = torch::randn({B, H, Q, d});
  const auto e = torch::randn({k_max + 1, d}), ev = torch::randn({k_max + 1, 2});
  const auto a = torch::softmax(torch::randn({B, H, Q, K}), -1);
  const auto s = shaw_key_scores(q, e, K);
  const auto o = shaw_value_term(a, ev);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Q; ++i) {
        auto want_o = torch::zeros({2});
        for (int64_t j = 0; j < K; ++j) {
          const int64_t c = std::min<int64_t>(std::max<int64_t>(i + K - Q - j, 0), k_max);
          EXPECT_NEAR(s[b][h][i][j].item<double>(), (q[b][h][i] * e[c]).sum().item<double>(), 1e-5);
          want_o += a[b][h][i][j] * ev[c];
        }
        EXPECT_TRUE(torch::allclose(o[b][h][i], want_o, 1e-5, 1e-5));
      }
}

TEST(Shaw, BadShapesThrow) {
  EXPECT_THROW(shaw_key_scores(torch::zeros({1, 1, 3, 2}), torch::zeros({2, 3}), 3), Error);
  EXPECT_THROW(shaw_value_term(torch::zeros({1, 1, 4, 3}), torch::zeros({2, 1})), Error);
  EXPECT_THROW(shaw_relative_index(2, 2, -1), Error);
}

}  // namespace
}  // namespace poslens
