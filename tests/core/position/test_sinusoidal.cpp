// Sinusoidal absolute table (docs/formulas.md §2) against values computed by hand for d_model = 4.
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <cmath>

#include "core/base/error.h"
#include "core/position/sinusoidal.h"

namespace poslens {
namespace {

// d_model = 4: w_0 = 10000^0 = 1, w_1 = 10000^(-2/4) = 0.01.
TEST(Sinusoidal, TableForDModel4MatchesHandValues) {
  const auto p = reference::sinusoidal_table(3, 4);
  ASSERT_EQ(p.sizes(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(p.scalar_type(), torch::kFloat32);
  const double expected[3][4] = {
      {0.0, 1.0, 0.0, 1.0},
      {std::sin(1.0), std::cos(1.0), std::sin(0.01), std::cos(0.01)},
      {std::sin(2.0), std::cos(2.0), std::sin(0.02), std::cos(0.02)},
  };
  for (int j = 0; j < 3; ++j)
    for (int c = 0; c < 4; ++c)
      EXPECT_NEAR(p[j][c].item<double>(), expected[j][c], 1e-7) << "j=" << j << " c=" << c;
}

TEST(Sinusoidal, FrequenciesAreTenThousandToMinusTwoKOverD) {
  const auto w = sinusoidal_frequencies(6);
  ASSERT_EQ(w.size(0), 3);
  EXPECT_DOUBLE_EQ(w[0].item<double>(), 1.0);
  EXPECT_NEAR(w[1].item<double>(), std::pow(10000.0, -2.0 / 6.0), 1e-15);
  EXPECT_NEAR(w[2].item<double>(), std::pow(10000.0, -4.0 / 6.0), 1e-15);
}

TEST(Sinusoidal, ConcatenatedLayoutPutsAllSinesFirst) {
  const auto pos = torch::tensor({3.0, -1.5}, torch::kFloat64);
  const auto p = sinusoidal_embedding(pos, 4, SinusoidalLayout::Concatenated);
  const double x[2] = {3.0, -1.5};
  for (int n = 0; n < 2; ++n) {
    EXPECT_NEAR(p[n][0].item<double>(), std::sin(x[n]), 1e-7);
    EXPECT_NEAR(p[n][1].item<double>(), std::sin(0.01 * x[n]), 1e-7);
    EXPECT_NEAR(p[n][2].item<double>(), std::cos(x[n]), 1e-7);
    EXPECT_NEAR(p[n][3].item<double>(), std::cos(0.01 * x[n]), 1e-7);
  }
}

TEST(Sinusoidal, LargePositionsAreComputedInDoublePrecision) {
  // 1e5 rad in float32 loses ~4e-3 of the angle; the float64 path keeps sin exact to 1e-7.
  const auto p = sinusoidal_embedding(torch::tensor({100000.0}, torch::kFloat64), 2);
  EXPECT_NEAR(p[0][0].item<double>(), std::sin(100000.0), 1e-6);
  EXPECT_NEAR(p[0][1].item<double>(), std::cos(100000.0), 1e-6);
}

TEST(Sinusoidal, OddDModelThrows) {
  EXPECT_THROW(reference::sinusoidal_table(4, 5), Error);
  EXPECT_THROW(reference::sinusoidal_table(-1, 4), Error);
  EXPECT_THROW(sinusoidal_embedding(torch::zeros({2, 2}), 4), Error);
}

}  // namespace
}  // namespace poslens
