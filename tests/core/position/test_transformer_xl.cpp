// Transformer-XL rel-shift (Kernes 2021; kimiyoung/transformer-xl) against direct O(n^2)
// constructions written here, and a hand example showing where each entry lands.
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <cmath>

#include "core/base/error.h"
#include "core/position/sinusoidal.h"
#include "core/position/transformer_xl.h"

namespace poslens {
namespace {

double dot_value(const at::Tensor& a, const at::Tensor& b) { return (a * b).sum().item<double>(); }

// Row i of the 3x3 input, column c <-> distance 2 - c (the table in descending order):
//   x = [[1 2 3]     padded   [0 1 2 3 | 0 4 5 6 | 0 7 8 9]  viewed [4, 3], first row
//        [4 5 6]  -> flat:    (0 1 2) dropped -> 3 0 4 5 6 0 7 8 9 -> [[3 0 4]
//        [7 8 9]]                                                      [5 6 0]
//                                                                      [7 8 9]]
// Lower triangle: out[i][j] = x[i][2 - (i - j)], the entry for distance i - j.
TEST(TransformerXl, RelShiftHandExampleT3) {
  const auto x = torch::arange(1, 10, torch::kFloat32).view({3, 3});
  const auto out = rel_shift(x);
  const float expected[3][3] = {{3, 0, 4}, {5, 6, 0}, {7, 8, 9}};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(out[i][j].item<float>(), expected[i][j]) << i << "," << j;
  // Where the causal entries come from: distance 0 (column 2) on the diagonal, and so on.
  EXPECT_EQ(out[0][0].item<float>(), x[0][2].item<float>());
  EXPECT_EQ(out[1][0].item<float>(), x[1][1].item<float>());
  EXPECT_EQ(out[2][0].item<float>(), x[2][0].item<float>());
}

// Column c <-> distance c; padded on the right, last row dropped:
//   flat 1 2 3 0 4 5 6 0 7 8 9 0 -> first 9 -> [[1 2 3] [0 4 5] [6 0 7]];
// upper triangle: out[i][j] = x[i][j - i].
TEST(TransformerXl, RelShiftRightHandExampleT3) {
  const auto x = torch::arange(1, 10, torch::kFloat32).view({3, 3});
  const auto out = rel_shift_right(x);
  const float expected[3][3] = {{1, 2, 3}, {0, 4, 5}, {6, 0, 7}};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(out[i][j].item<float>(), expected[i][j]) << i << "," << j;
}

TEST(TransformerXl, RelShiftEqualsDirectGatherOnCausalEntries) {
  torch::manual_seed(7);
  const int64_t sizes[][2] = {{1, 1}, {3, 3}, {5, 5}, {4, 7}, {8, 8}, {2, 9}};
  for (const auto& s : sizes) {
    const int64_t q_len = s[0], k_len = s[1], mem = k_len - q_len, d = 4;
    const auto q = torch::randn({2, 3, q_len, d});
    const auto r = torch::randn({3, k_len + 2, d});  // per-head table, more rows than needed
    const auto fast = relative_scores_shifted(q, r, k_len);
    const auto direct = relative_scores_direct(q, r, k_len);
    ASSERT_EQ(fast.sizes(), (std::vector<int64_t>{2, 3, q_len, k_len}));
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t h = 0; h < 3; ++h)
        for (int64_t i = 0; i < q_len; ++i)
          for (int64_t j = 0; j <= i + mem; ++j) {
            const double want = dot_value(q[b][h][i], r[h][i + mem - j]);
            EXPECT_NEAR(fast[b][h][i][j].item<double>(), want, 1e-5)
                << "Q=" << q_len << " K=" << k_len << " i=" << i << " j=" << j;
            EXPECT_NEAR(direct[b][h][i][j].item<double>(), want, 1e-5);
          }
    // Raw rel_shift agrees with the fast path on the causal entries too.
    const auto raw = rel_shift(torch::matmul(q, r.narrow(1, 0, k_len).flip({1}).transpose(1, 2)));
    const auto allowed = torch::ones({q_len, k_len}, torch::kBool).tril(mem);
    EXPECT_TRUE(torch::allclose(raw.masked_fill(allowed.logical_not(), 0), fast, 1e-5, 1e-6));
  }
}

TEST(TransformerXl, BidirectionalEqualsDirectGatherOnAllEntries) {
  torch::manual_seed(11);
  for (int64_t t : {1, 2, 3, 6, 9}) {
    const int64_t d = 5;
    const auto q = torch::randn({2, 2, t, d});
    const auto r = torch::randn({t, d});  // shared by heads
    const auto fast = relative_scores_bidirectional(q, r);
    const auto direct = relative_scores_direct(q, r, t, /*bidirectional=*/true);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t i = 0; i < t; ++i)
          for (int64_t j = 0; j < t; ++j) {
            const double want = dot_value(q[b][h][i], r[std::abs(i - j)]);
            EXPECT_NEAR(fast[b][h][i][j].item<double>(), want, 1e-5) << "T=" << t << " " << i << "," << j;
            EXPECT_NEAR(direct[b][h][i][j].item<double>(), want, 1e-5);
          }
  }
}

TEST(TransformerXl, BidirectionalWithDistinctLeftAndRightTables) {
  torch::manual_seed(3);
  const int64_t t = 5, d = 3;
  const auto q = torch::randn({1, 1, t, d});
  const auto left = torch::randn({t, d}), right = torch::randn({t, d});
  const auto out = rel_shift_bidirectional(torch::matmul(q, left.flip({0}).t()),
                                           torch::matmul(q, right.t()));
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < t; ++j) {
      const double want = j <= i ? dot_value(q[0][0][i], left[i - j]) : dot_value(q[0][0][i], right[j - i]);
      EXPECT_NEAR(out[0][0][i][j].item<double>(), want, 1e-5) << i << "," << j;
    }
}

TEST(TransformerXl, RelativeEmbeddingIsSinusoidalOverDescendingDistances) {
  const auto r = txl_relative_embedding(3, 4);
  ASSERT_EQ(r.sizes(), (std::vector<int64_t>{3, 4}));
  // Row 0 = distance 2, layout [sin(2), sin(0.02), cos(2), cos(0.02)]; row 2 = distance 0.
  EXPECT_NEAR(r[0][0].item<double>(), std::sin(2.0), 1e-7);
  EXPECT_NEAR(r[0][1].item<double>(), std::sin(0.02), 1e-7);
  EXPECT_NEAR(r[0][2].item<double>(), std::cos(2.0), 1e-7);
  EXPECT_NEAR(r[0][3].item<double>(), std::cos(0.02), 1e-7);
  EXPECT_NEAR(r[2][0].item<double>(), 0.0, 1e-7);
  EXPECT_NEAR(r[2][2].item<double>(), 1.0, 1e-7);
}

TEST(TransformerXl, ScoresEqualTermByTermConstruction) {
  torch::manual_seed(5);
  const int64_t B = 2, H = 2, Q = 4, K = 6, d = 4, d_model = 8, mem = K - Q;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const auto q = torch::randn({B, H, Q, d}), k = torch::randn({B, H, K, d});
  const auto u = torch::randn({H, d}), v = torch::randn({H, d});
  const auto w_r = torch::randn({H * d, d_model});
  const auto R = txl_relative_embedding(K, d_model);                        // [K, d_model]
  const auto r_proj = torch::matmul(R, w_r.t()).view({K, H, d}).permute({1, 0, 2});  // [H, K, d]
  const auto scores = reference::txl_scores(q, k, r_proj, u, v, scale);
  const auto pos = txl_position_scores(q, r_proj, v, scale);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Q; ++i)
        for (int64_t j = 0; j < K; ++j) {
          const double ac = dot_value(q[b][h][i] + u[h], k[b][h][j]);
          if (j > i + mem) {
            EXPECT_NEAR(pos[b][h][i][j].item<double>(), 0.0, 0.0);
            EXPECT_NEAR(scores[b][h][i][j].item<double>(), ac * scale, 1e-5);
            continue;
          }
          // W_R R_{i+M-j}: sinusoid of that distance projected by head h's rows of W_R.
          const auto r_dist = sinusoidal_embedding(torch::tensor({double(i + mem - j)}), d_model,
                                                   SinusoidalLayout::Concatenated)[0];
          const auto wr_r = torch::matmul(w_r.narrow(0, h * d, d), r_dist);
          const double bd = dot_value(q[b][h][i] + v[h], wr_r);
          EXPECT_NEAR(pos[b][h][i][j].item<double>(), bd * scale, 1e-4) << i << "," << j;
          EXPECT_NEAR(scores[b][h][i][j].item<double>(), (ac + bd) * scale, 1e-4) << i << "," << j;
        }
}

TEST(TransformerXl, BadShapesThrow) {
  EXPECT_THROW(rel_shift(torch::zeros({4, 3})), Error);  // Q > K
  EXPECT_THROW(rel_shift_right(torch::zeros({3, 4})), Error);
  EXPECT_THROW(rel_shift_bidirectional(torch::zeros({3, 3}), torch::zeros({4, 4})), Error);
  EXPECT_THROW(relative_scores_direct(torch::zeros({1, 1, 3, 2}), torch::zeros({2, 2}), 3), Error);
  EXPECT_THROW(reference::txl_scores(torch::zeros({1, 2, 3, 4}), torch::zeros({1, 2, 3, 4}),
                          torch::zeros({2, 4, 4}), torch::zeros({2, 4}), torch::zeros({2, 4}), 1.0),
               Error);  // r_proj has 4 distances for 3 keys
}

}  // namespace
}  // namespace poslens
