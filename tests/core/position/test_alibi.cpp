// ALiBi slopes and biases against values computed by hand from docs/formulas.md §2.
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <cmath>

#include "core/position/alibi.h"
#include "core/base/error.h"

namespace poslens {
namespace {

TEST(Alibi, EightHeadSlopesAreHalfToOneOver256) {
  const auto s = alibi_slopes(8);
  const std::vector<double> expected{1.0 / 2, 1.0 / 4, 1.0 / 8, 1.0 / 16,
                                     1.0 / 32, 1.0 / 64, 1.0 / 128, 1.0 / 256};
  ASSERT_EQ(s.size(), expected.size());
  for (size_t h = 0; h < s.size(); ++h) EXPECT_DOUBLE_EQ(s[h], expected[h]) << "head " << h;
}

TEST(Alibi, TwelveHeadSlopesInterleaveSixteenHeadSlopes) {
  // 8 heads: 2^-1..2^-8; 16 heads: 2^-0.5, 2^-1, 2^-1.5, ...; every other from index 0:
  // 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5.
  const auto s = alibi_slopes(12);
  const std::vector<double> expected{0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125,
                                     0.00390625, 0.70710678118654752, 0.35355339059327376,
                                     0.17677669529663688, 0.08838834764831844};
  ASSERT_EQ(s.size(), expected.size());
  for (size_t h = 0; h < s.size(); ++h) EXPECT_NEAR(s[h], expected[h], 1e-15) << "head " << h;
}

TEST(Alibi, SingleHeadAndThreeHeads) {
  // H=1: 2^-8. H=3: closest 2 -> 2^-4, 2^-8; then 4-head slopes 2^-2, 2^-4, ... -> first 2^-2.
  EXPECT_DOUBLE_EQ(alibi_slopes(1)[0], 1.0 / 256);
  const auto s = alibi_slopes(3);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_DOUBLE_EQ(s[0], 1.0 / 16);
  EXPECT_DOUBLE_EQ(s[1], 1.0 / 256);
  EXPECT_DOUBLE_EQ(s[2], 1.0 / 4);
}

TEST(Alibi, BiasThreeByThreeByHand) {
  // slopes 0.5 and 0.25; bias[h][i][j] = -m_h (i - j) for j <= i, 0 above the diagonal.
  const auto b = alibi_bias({0.5, 0.25}, 3, 3);
  ASSERT_EQ(b.sizes(), (at::IntArrayRef{2, 3, 3}));
  const double expected[2][3][3] = {{{0, 0, 0}, {-0.5, 0, 0}, {-1.0, -0.5, 0}},
                                    {{0, 0, 0}, {-0.25, 0, 0}, {-0.5, -0.25, 0}}};
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        EXPECT_NEAR(b[h][i][j].item<double>(), expected[h][i][j], 1e-7) << h << i << j;
}

TEST(Alibi, QueriesAreTheLastPositionsWhenShorterThanKeys) {
  // q_len 1, k_len 3: the single query sits at i = 2 -> [-2m, -m, 0].
  const auto b = alibi_bias({0.5}, 1, 3);
  ASSERT_EQ(b.sizes(), (at::IntArrayRef{1, 1, 3}));
  EXPECT_NEAR(b[0][0][0].item<double>(), -1.0, 1e-7);
  EXPECT_NEAR(b[0][0][1].item<double>(), -0.5, 1e-7);
  EXPECT_NEAR(b[0][0][2].item<double>(), 0.0, 1e-7);
}

TEST(Alibi, BadArgumentsThrow) {
  EXPECT_THROW(alibi_slopes(0), Error);
  EXPECT_THROW(alibi_bias({}, 2, 2), Error);
  EXPECT_THROW(alibi_bias({0.5}, 3, 2), Error);
  EXPECT_THROW(alibi_bias({0.5}, 0, 2), Error);
}

}  // namespace
}  // namespace poslens
