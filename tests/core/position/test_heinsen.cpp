// Heinsen exponentiated-state position encoding (Heinsen 2024; docs/formulas.md §2): the parallel scan
// equals the sequential recurrence, and a T=2 example computed by hand.
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <cmath>

#include "core/base/error.h"
#include "core/position/heinsen.h"

namespace poslens {
namespace {

// p = (0.5, 0.25), exp(h) = (1, 2), s_0 = 0 so exp(s_0) = 1:
//   exp(s_1) = 0.5·1 + 1 = 1.5,   exp(s_2) = 0.25·1.5 + 2 = 2.375.
// (With exp(s_0) = 0 instead, s_1 would be h_1 = 0: the initial state matters.)
TEST(Heinsen, HandExampleT2D1) {
  const auto log_p = torch::tensor({std::log(0.5), std::log(0.25)}, torch::kFloat64).view({1, 2, 1});
  const auto h = torch::tensor({0.0, std::log(2.0)}, torch::kFloat64).view({1, 2, 1});
  for (const auto& s : {heinsen_scan(log_p, h), heinsen_sequential(log_p, h)}) {
    ASSERT_EQ(s.sizes(), (std::vector<int64_t>{1, 2, 1}));
    EXPECT_NEAR(s[0][0][0].item<double>(), std::log(1.5), 1e-12);
    EXPECT_NEAR(s[0][1][0].item<double>(), std::log(2.375), 1e-12);
  }
}

TEST(Heinsen, ScanEqualsSequentialRecurrence) {
  for (int seed : {1, 2, 3, 4}) {
    torch::manual_seed(seed);
    for (int64_t t : {1, 5, 17, 64}) {
      const auto log_p = torch::log_sigmoid(torch::randn({3, t, 8}) * 3);
      const auto h = torch::randn({3, t, 8}) * 2;
      const auto scan = heinsen_scan(log_p, h);
      const auto seq = heinsen_sequential(log_p, h);
      EXPECT_EQ(scan.scalar_type(), torch::kFloat32);
      EXPECT_LT((scan - seq).abs().max().item<double>(), 1e-5) << "seed " << seed << " T " << t;
      // float64 agrees far tighter.
      const auto scan64 = heinsen_scan(log_p.to(torch::kFloat64), h.to(torch::kFloat64));
      const auto seq64 = heinsen_sequential(log_p.to(torch::kFloat64), h.to(torch::kFloat64));
      EXPECT_LT((scan64 - seq64).abs().max().item<double>(), 1e-10);
    }
  }
}

TEST(Heinsen, GivenInitialStateContinuesAPreviousChunk) {
  torch::manual_seed(9);
  const auto log_p = torch::log_sigmoid(torch::randn({2, 12, 4}));
  const auto h = torch::randn({2, 12, 4});
  const auto whole = heinsen_scan(log_p, h);
  const auto first = heinsen_scan(log_p.narrow(1, 0, 5), h.narrow(1, 0, 5));
  const auto rest = heinsen_scan(log_p.narrow(1, 5, 7), h.narrow(1, 5, 7), first.narrow(1, 4, 1));
  EXPECT_TRUE(torch::allclose(rest, whole.narrow(1, 5, 7), 1e-5, 1e-5));
  const auto rest_seq =
      heinsen_sequential(log_p.narrow(1, 5, 7), h.narrow(1, 5, 7), first.narrow(1, 4, 1));
  EXPECT_TRUE(torch::allclose(rest, rest_seq, 1e-5, 1e-5));
}

TEST(Heinsen, MismatchedShapesThrow) {
  EXPECT_THROW(heinsen_scan(torch::zeros({1, 3, 2}), torch::zeros({1, 4, 2})), Error);
  EXPECT_THROW(heinsen_sequential(torch::zeros({3}), torch::zeros({3})), Error);
  EXPECT_THROW(heinsen_scan(torch::zeros({1, 3, 2}), torch::zeros({1, 3, 2}), torch::zeros({5})),
               Error);
}

}  // namespace
}  // namespace poslens
