// RoPE scaling (HF modeling_rope_utils types) against inverse frequencies computed by hand.
// All cases: rotary_dim d = 8, rope_theta = 10000, so theta_c = 10^(-c) = 1, 0.1, 0.01, 0.001.
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/base/error.h"
#include "core/position/rope_scaling.h"

namespace poslens {
namespace {

void expect_inv_freq(const RopeFrequencies& f, const std::vector<double>& expected,
                     double tol = 1e-9) {
  ASSERT_EQ(f.inv_freq.dim(), 1);
  ASSERT_EQ(f.inv_freq.size(0), static_cast<int64_t>(expected.size()));
  EXPECT_EQ(f.inv_freq.scalar_type(), torch::kFloat64);
  for (size_t c = 0; c < expected.size(); ++c)
    EXPECT_NEAR(f.inv_freq[c].item<double>(), expected[c], tol * std::abs(expected[c]))
        << "component " << c;
}

RopeScaling of_type(const std::string& type) {
  RopeScaling s;
  s.type = type;
  return s;
}

TEST(RopeScaling, DefaultIsPlainRope) {
  const auto f = rope_frequencies_scaled(10000.0, 8, of_type("default"));
  expect_inv_freq(f, {1.0, 0.1, 0.01, 0.001});
  EXPECT_DOUBLE_EQ(f.attention_factor, 1.0);
}

TEST(RopeScaling, LinearDividesByFactor) {
  auto s = of_type("linear");
  s.factor = 4.0;
  const auto f = rope_frequencies_scaled(10000.0, 8, s);
  expect_inv_freq(f, {0.25, 0.025, 0.0025, 0.00025});
  EXPECT_DOUBLE_EQ(f.attention_factor, 1.0);
}

TEST(RopeScaling, DynamicNtkGrowsTheBaseBeyondMaxPositions) {
  // factor 2, M = 100, seq_len 200: (2·200/100 - 1) = 3, base' = 1e4 · 3^(8/6);
  // inv_freq_c = base'^(-c/4) = 10^(-c) · 3^(-c/3): 1, 0.1·3^(-1/3) = 0.069336127,
  // 0.01·3^(-2/3) = 0.0048074986, 0.001/3.
  auto s = of_type("dynamic");
  s.factor = 2.0;
  s.max_position_embeddings = 100;
  expect_inv_freq(rope_frequencies_scaled(10000.0, 8, s, 200),
                  {1.0, 0.069336127, 0.0048074986, 0.001 / 3.0}, 1e-7);
  // seq_len <= M (and not given): s = M, (2 - 1) = 1, unchanged.
  expect_inv_freq(rope_frequencies_scaled(10000.0, 8, s, 50), {1.0, 0.1, 0.01, 0.001});
  expect_inv_freq(rope_frequencies_scaled(10000.0, 8, s), {1.0, 0.1, 0.01, 0.001});
}

TEST(RopeScaling, YarnBlendsInterpolationAndExtrapolation) {
  // factor 4, training length L0 = 64. dim(r) = 8 ln(64/(2 pi r)) / (2 ln 1e4):
  // r = 32: 8·ln(1/pi)/18.420681 = 8·(-1.1447299)/18.420681 = -0.4971 -> floor -1 -> low 0;
  // r = 1:  8·ln(10.185916)/18.420681 = 8·2.3210036/18.420681 = 1.0080 -> ceil 2 -> high 2.
  // ramp = clamp(c/2, 0, 1) = 0, 0.5, 1, 1; e = 1 - ramp = 1, 0.5, 0, 0.
  // inv = theta/4·(1-e) + theta·e = 1, 0.1·(0.125 + 0.5) = 0.0625, 0.0025, 0.00025.
  // attention factor 0.1·ln 4 + 1 = 1.1386294361.
  auto s = of_type("yarn");
  s.factor = 4.0;
  s.max_position_embeddings = 64;
  const auto f = rope_frequencies_scaled(10000.0, 8, s);
  expect_inv_freq(f, {1.0, 0.0625, 0.0025, 0.00025});
  EXPECT_NEAR(f.attention_factor, 1.1386294361, 1e-9);
  // mscale 1, mscale_all_dim 0.5: (0.1 ln4 + 1)/(0.05 ln4 + 1) = 1.1386294/1.0693147 = 1.0648216.
  s.mscale = 1.0;
  s.mscale_all_dim = 0.5;
  EXPECT_NEAR(rope_frequencies_scaled(10000.0, 8, s).attention_factor, 1.0648216, 1e-6);
  // An explicit attention factor wins.
  s.attention_factor = 0.7;
  EXPECT_DOUBLE_EQ(rope_frequencies_scaled(10000.0, 8, s).attention_factor, 0.7);
}

TEST(RopeScaling, YarnOriginalMaxReplacesFactor) {
  // max 256, original 64: factor = 256/64 = 4 and L0 = 64: the same numbers as above.
  auto s = of_type("yarn");
  s.factor = 99.0;
  s.max_position_embeddings = 256;
  s.original_max_position_embeddings = 64;
  const auto f = rope_frequencies_scaled(10000.0, 8, s);
  expect_inv_freq(f, {1.0, 0.0625, 0.0025, 0.00025});
  EXPECT_NEAR(f.attention_factor, 1.1386294361, 1e-9);
}

TEST(RopeScaling, Llama3KeepsHighInterpolatesLowAndSmoothsBetween) {
  // factor 8, low 1, high 4, L0 = 64: thresholds 64 and 16. wavelengths 2 pi/theta:
  // 6.283 (< 16: kept, 1), 62.83 (medium), 628.3 and 6283 (> 64: /8 -> 0.00125, 0.000125).
  // Medium: s = (64/62.831853 - 1)/3 = 0.0061972; 0.1·((1 - s)/8 + s) = 0.0130422560.
  auto s = of_type("llama3");
  s.factor = 8.0;
  s.low_freq_factor = 1.0;
  s.high_freq_factor = 4.0;
  s.original_max_position_embeddings = 64;
  const double sm = (64.0 / (2.0 * 3.14159265358979323846 / 0.1) - 1.0) / 3.0;
  const auto f = rope_frequencies_scaled(10000.0, 8, s);
  expect_inv_freq(f, {1.0, 0.1 * ((1.0 - sm) / 8.0 + sm), 0.00125, 0.000125});
  EXPECT_NEAR(f.inv_freq[1].item<double>(), 0.0130422560, 1e-9);
  EXPECT_DOUBLE_EQ(f.attention_factor, 1.0);
}

TEST(RopeScaling, LongropePicksFactorsBySequenceLength) {
  // max 256, original 64 -> factor 4; attention sqrt(1 + ln 4/ln 64) = sqrt(4/3) = 1.1547005384.
  auto s = of_type("longrope");
  s.max_position_embeddings = 256;
  s.original_max_position_embeddings = 64;
  s.short_factor = {1.0, 1.0, 2.0, 2.0};
  s.long_factor = {1.0, 2.0, 4.0, 8.0};
  const auto long_f = rope_frequencies_scaled(10000.0, 8, s, 100);
  expect_inv_freq(long_f, {1.0, 0.05, 0.0025, 0.000125});
  EXPECT_NEAR(long_f.attention_factor, 1.1547005384, 1e-9);
  expect_inv_freq(rope_frequencies_scaled(10000.0, 8, s, 64), {1.0, 0.1, 0.005, 0.0005});
  expect_inv_freq(rope_frequencies_scaled(10000.0, 8, s), {1.0, 0.1, 0.005, 0.0005});
}

TEST(RopeScaling, BadArgumentsThrow) {
  EXPECT_THROW(rope_frequencies_scaled(10000.0, 8, of_type("ntk-by-parts")), Error);
  EXPECT_THROW(rope_frequencies_scaled(10000.0, 7, of_type("default")), Error);
  auto lin = of_type("linear");
  lin.factor = 0.0;
  EXPECT_THROW(rope_frequencies_scaled(10000.0, 8, lin), Error);
  auto dyn = of_type("dynamic");
  dyn.factor = 2.0;  // max_position_embeddings missing
  EXPECT_THROW(rope_frequencies_scaled(10000.0, 8, dyn), Error);
  auto yarn = of_type("yarn");
  yarn.factor = 4.0;  // no training length
  EXPECT_THROW(rope_frequencies_scaled(10000.0, 8, yarn), Error);
  auto l3 = of_type("llama3");
  l3.factor = 8.0;  // original_max_position_embeddings missing
  EXPECT_THROW(rope_frequencies_scaled(10000.0, 8, l3), Error);
  auto lr = of_type("longrope");
  lr.max_position_embeddings = 256;
  lr.original_max_position_embeddings = 64;
  lr.short_factor = {1.0, 1.0};
  lr.long_factor = {1.0, 1.0, 1.0, 1.0};
  EXPECT_THROW(rope_frequencies_scaled(10000.0, 8, lr), Error);
}

}  // namespace
}  // namespace poslens
