// T5 relative-position buckets and bias against values computed by hand from HF's formula
// (docs/formulas.md §2 "T5 bucket bias").
#include <torch/torch.h>

#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/position/t5.h"

namespace poslens {
namespace {

int64_t bucket(int64_t rel, bool bidirectional, int64_t nb = 32, int64_t max_distance = 128) {
  return t5_relative_position_bucket(torch::tensor({rel}, torch::kLong), bidirectional, nb,
                                     max_distance)[0]
      .item<int64_t>();
}

TEST(T5Bias, CausalBucketsByHand) {
  // Causal, num_buckets 32, max_distance 128: n = max(-rel, 0), max_exact = 16;
  // n >= 16: 16 + trunc(ln(n/16) / ln(8) * 16), capped at 31.  ln 8 = 2.0794415.
  EXPECT_EQ(bucket(0, false), 0);
  EXPECT_EQ(bucket(5, false), 0);     // future keys all in bucket 0
  EXPECT_EQ(bucket(-1, false), 1);
  EXPECT_EQ(bucket(-15, false), 15);  // last exact bucket
  EXPECT_EQ(bucket(-16, false), 16);  // ln(1) = 0 -> 16
  EXPECT_EQ(bucket(-20, false), 17);  // ln(1.25)=0.2231435 / 2.0794415 * 16 = 1.717 -> 17
  EXPECT_EQ(bucket(-32, false), 21);  // ln 2 / ln 8 * 16 = 5.333 -> 21
  EXPECT_EQ(bucket(-50, false), 24);  // ln(3.125)=1.1394343 / 2.0794415 * 16 = 8.767 -> 24
  EXPECT_EQ(bucket(-127, false), 31); // ln(7.9375)=2.0715984 / 2.0794415 * 16 = 15.94 -> 31
  EXPECT_EQ(bucket(-128, false), 31); // 16 + 16 = 32, capped at 31
  EXPECT_EQ(bucket(-500, false), 31); // capped
}

TEST(T5Bias, BidirectionalBucketsByHand) {
  // Bidirectional, 32 buckets: nb = 16 per direction, later keys offset by 16, max_exact = 8;
  // n >= 8: 8 + trunc(ln(n/8) / ln(16) * 8), capped at 15.  ln 16 = 2.7725887.
  EXPECT_EQ(bucket(0, true), 0);
  EXPECT_EQ(bucket(3, true), 19);    // 16 + 3
  EXPECT_EQ(bucket(-3, true), 3);
  EXPECT_EQ(bucket(20, true), 26);   // ln(2.5)=0.9162907 / 2.7725887 * 8 = 2.644 -> 16 + 8 + 2
  EXPECT_EQ(bucket(-20, true), 10);  // 8 + 2
  EXPECT_EQ(bucket(200, true), 31);  // 8 + trunc(ln 25 / ln 16 * 8 = 9.29) = 17, capped 15 -> 31
}

TEST(T5Bias, KeepsTheShapeOfItsInput) {
  const auto rel = torch::tensor({0, -1, -20, -500}, torch::kLong).view({2, 2});
  const auto b = t5_relative_position_bucket(rel, false, 32, 128);
  ASSERT_EQ(b.sizes(), (at::IntArrayRef{2, 2}));
  EXPECT_EQ(b.scalar_type(), torch::kLong);
  EXPECT_EQ(b[1][0].item<int64_t>(), 17);
}

TEST(T5Bias, BiasLooksUpTheTablePerHead) {
  // 8 causal buckets, max_distance 16: max_exact 4, so distances 0..3 are exact buckets.
  // table[b, h] = 10 h + b. 3x3: bias[h][i][j] = table[max(i - j, 0), h].
  const auto table = torch::tensor({0.f, 10.f, 1.f, 11.f, 2.f, 12.f, 3.f, 13.f, 4.f, 14.f, 5.f,
                                    15.f, 6.f, 16.f, 7.f, 17.f})
                         .view({8, 2});
  const auto b = t5_bias(table, 3, 3, false, 8, 16);
  ASSERT_EQ(b.sizes(), (at::IntArrayRef{2, 3, 3}));
  const double expected[2][3][3] = {{{0, 0, 0}, {1, 0, 0}, {2, 1, 0}},
                                    {{10, 10, 10}, {11, 10, 10}, {12, 11, 10}}};
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        EXPECT_FLOAT_EQ(b[h][i][j].item<float>(), expected[h][i][j]) << h << i << j;
  // One query at position 2 against 3 keys: the last row above.
  const auto last = t5_bias(table, 1, 3, false, 8, 16);
  EXPECT_FLOAT_EQ(last[1][0][0].item<float>(), 12.f);
}

TEST(T5Bias, BadArgumentsThrow) {
  const auto rel = torch::zeros({2}, torch::kLong);
  EXPECT_THROW(t5_relative_position_bucket(rel.to(torch::kFloat32), false, 32, 128), Error);
  EXPECT_THROW(t5_relative_position_bucket(rel, false, 1, 128), Error);
  EXPECT_THROW(t5_relative_position_bucket(rel, false, 32, 16), Error);
  EXPECT_THROW(t5_bias(torch::zeros({16, 2}), 3, 3, false, 32, 128), Error);
  EXPECT_THROW(t5_bias(torch::zeros({32, 2}), 4, 3, false, 32, 128), Error);
}

}  // namespace
}  // namespace poslens
