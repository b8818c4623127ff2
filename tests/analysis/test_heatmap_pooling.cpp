// Tests of heatmap pooling (analysis/heatmap_pooling.h) against hand-computed blocks.
#include "analysis/heatmap_pooling.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>

#include "core/base/error.h"

namespace poslens {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

TEST(HeatmapPooling, SmallMapIsReturnedAsIs) {
  const auto map = torch::tensor({{1.0f, kNegInf, 3.0f}, {4.0f, 5.0f, 6.0f}});
  const HeatmapData h = pool_heatmap(map, 2, 3);
  EXPECT_EQ(h.rows, 2);
  EXPECT_EQ(h.cols, 3);
  EXPECT_EQ(h.source_rows, 2);
  EXPECT_EQ(h.source_cols, 3);
  EXPECT_FALSE(h.pooled());
  ASSERT_EQ(h.values.size(), 6u);
  EXPECT_FLOAT_EQ(h.at(0, 0), 1.0f);
  EXPECT_TRUE(std::isnan(h.at(0, 1)));  // -inf becomes NaN
  EXPECT_FLOAT_EQ(h.at(0, 2), 3.0f);
  EXPECT_FLOAT_EQ(h.at(1, 2), 6.0f);
  EXPECT_TRUE(h.row_labels.empty());
  EXPECT_TRUE(h.col_labels.empty());
}

TEST(HeatmapPooling, MaxAndMeanOf4x4To2x2) {
  // 0  1  2  3
  // 4  5  6  7
  // 8  9 10 11
  // 12 13 14 15
  const auto map = torch::arange(16, torch::kDouble).reshape({4, 4});
  const HeatmapData mx = pool_heatmap(map, 2, 2, Pooling::Max);
  EXPECT_EQ(mx.rows, 2);
  EXPECT_EQ(mx.cols, 2);
  EXPECT_TRUE(mx.pooled());
  EXPECT_EQ(mx.values, (std::vector<float>{5, 7, 13, 15}));
  const HeatmapData mean = pool_heatmap(map, 2, 2, Pooling::Mean);
  EXPECT_EQ(mean.values, (std::vector<float>{2.5f, 4.5f, 10.5f, 12.5f}));
  EXPECT_EQ(mean.source_rows, 4);
  EXPECT_EQ(mean.source_cols, 4);
}

TEST(HeatmapPooling, OnlyOneAxisPooledWhenTheOtherFits) {
  const auto map = torch::arange(12, torch::kFloat).reshape({6, 2});
  const HeatmapData h = pool_heatmap(map, 3, 10, Pooling::Mean);
  EXPECT_EQ(h.rows, 3);
  EXPECT_EQ(h.cols, 2);
  EXPECT_EQ(h.values, (std::vector<float>{1, 2, 5, 6, 9, 10}));
}

TEST(HeatmapPooling, CausalMaskIsIgnoredInsideBlocks) {
  // 5x5 causal scores: cell (i, j) = 10*i + j for j <= i, -inf above the diagonal.
  auto map = torch::full({5, 5}, kNegInf);
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j <= i; ++j) map[i][j] = static_cast<float>(10 * i + j);
  // Blocks of 2x2 -> 3x3 output; edge blocks are 2x1, 1x2 and 1x1.
  const HeatmapData mx = pool_heatmap(map, 3, 3, Pooling::Max);
  ASSERT_EQ(mx.rows, 3);
  ASSERT_EQ(mx.cols, 3);
  EXPECT_EQ(mx.source_rows, 5);
  EXPECT_FLOAT_EQ(mx.at(0, 0), 11.0f);         // {0, -inf, 10, 11}
  EXPECT_TRUE(std::isnan(mx.at(0, 1)));        // all masked
  EXPECT_TRUE(std::isnan(mx.at(0, 2)));
  EXPECT_FLOAT_EQ(mx.at(1, 0), 31.0f);         // {20, 21, 30, 31}
  EXPECT_FLOAT_EQ(mx.at(1, 1), 33.0f);         // {22, -inf, 32, 33}
  EXPECT_TRUE(std::isnan(mx.at(1, 2)));        // column 4 of rows 2..3: masked
  EXPECT_FLOAT_EQ(mx.at(2, 0), 41.0f);         // {40, 41}
  EXPECT_FLOAT_EQ(mx.at(2, 1), 43.0f);         // {42, 43}
  EXPECT_FLOAT_EQ(mx.at(2, 2), 44.0f);         // {44}

  const HeatmapData mean = pool_heatmap(map, 3, 3, Pooling::Mean);
  EXPECT_FLOAT_EQ(mean.at(0, 0), 7.0f);        // (0 + 10 + 11) / 3
  EXPECT_TRUE(std::isnan(mean.at(0, 1)));
  EXPECT_FLOAT_EQ(mean.at(1, 0), 25.5f);       // (20 + 21 + 30 + 31) / 4
  EXPECT_FLOAT_EQ(mean.at(1, 1), 29.0f);       // (22 + 32 + 33) / 3
  EXPECT_TRUE(std::isnan(mean.at(1, 2)));
  EXPECT_FLOAT_EQ(mean.at(2, 0), 40.5f);
  EXPECT_FLOAT_EQ(mean.at(2, 2), 44.0f);
}

TEST(HeatmapPooling, NanCellsAreIgnoredToo) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto map = torch::tensor({{nan, 2.0f}, {4.0f, nan}});
  const HeatmapData mean = pool_heatmap(map, 1, 1, Pooling::Mean);
  ASSERT_EQ(mean.values.size(), 1u);
  EXPECT_FLOAT_EQ(mean.values[0], 3.0f);
}

TEST(HeatmapPooling, LargeMapPooledToScreenSize) {
  torch::manual_seed(0);
  const auto map = torch::rand({8192, 8192});
  const HeatmapData h = pool_heatmap(map, 1024, 1024, Pooling::Max);
  ASSERT_EQ(h.rows, 1024);
  ASSERT_EQ(h.cols, 1024);
  EXPECT_EQ(h.source_rows, 8192);
  EXPECT_EQ(h.source_cols, 8192);
  ASSERT_EQ(h.values.size(), 1024u * 1024u);
  const std::pair<int64_t, int64_t> spots[] = {{0, 0}, {1023, 1023}, {17, 900}, {512, 3}};
  for (const auto& [r, c] : spots) {
    const float expected =
        map.slice(0, r * 8, r * 8 + 8).slice(1, c * 8, c * 8 + 8).max().item<float>();
    EXPECT_EQ(h.at(r, c), expected) << "block " << r << ", " << c;
  }
}

TEST(HeatmapPooling, InvalidInputsAreErrors) {
  EXPECT_THROW(pool_heatmap(torch::zeros({2, 3, 4}), 10, 10), Error);
  EXPECT_THROW(pool_heatmap(torch::zeros({4}), 10, 10), Error);
  EXPECT_THROW(pool_heatmap(torch::zeros({4, 4}), 0, 10), Error);
  EXPECT_THROW(pool_heatmap(torch::zeros({4, 4}), 10, 0), Error);
  try {
    pool_heatmap(torch::zeros({2, 3, 4}), 10, 10);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("2-D"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace poslens
