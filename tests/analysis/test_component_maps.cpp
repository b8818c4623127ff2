// The decomposition's whole component maps (analysis/component_maps.h, frequency_curves.h
// component_maps): on the text-rope demo (RoPE, 2 heads, 16 components), each map is that head's
// component term of decompose_text, masked keys NaN, the mean the heads' mean, and the terms of
// every component add up to the layer's real scores (Chen et al. 2024 eq. 4) — so the maps are the
// real decomposition, not a copy of one row. The size budget keeps the mean or nothing.
#include <torch/torch.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "analysis/frequency_curves.h"
#include "analysis/text_decomposition.h"
#include "core/runtime/checkpoint.h"
#include "fixtures.h"

namespace poslens {
namespace {

using ::testing::HasSubstr;

at::Tensor as_tensor(const HeatmapData& map) {
  return torch::from_blob(const_cast<float*>(map.values.data()), {map.rows, map.cols}, torch::kFloat32).clone();
}

TEST(ComponentMaps, EveryHeadsComponentTermsOverTheWholeInput) {
  const auto demo = std::filesystem::path(POSLENS_SOURCE_DIR) / "resources/demos/text-rope-series/step-001500";
  const auto loaded = load_checkpoint(demo.string(), {"cpu", "float32", ""});
  const std::vector<int64_t> ids = {1, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50};
  const auto d = decompose_text(loaded, ids, 1);
  const int64_t T = 12, H = d.components.size(0), C = d.components.size(1);
  ASSERT_EQ(H, 2);
  ASSERT_EQ(C, 16);

  const auto maps = component_maps(d, 1'000'000, "demo");
  EXPECT_EQ(maps.heads, (std::vector<int>{-1, 0, 1}));
  EXPECT_EQ(maps.values.size(), static_cast<size_t>(3 * C * T * T));
  EXPECT_TRUE(maps.note.empty());
  const auto causal = torch::ones({T, T}, torch::kBool).tril();
  for (int h = -1; h < H; ++h) {
    at::Tensor total = torch::zeros({T, T});
    for (int c = 0; c < C; ++c) {
      const auto map = component_map(maps, h, c);
      ASSERT_EQ(map.rows, T);
      EXPECT_EQ(map.head, h);
      EXPECT_EQ(map.kind, HeatmapKind::Signed);
      const auto got = as_tensor(map);
      const auto want = h < 0 ? d.components.mean(0)[c] : d.components[h][c];
      EXPECT_TRUE(got.isnan().equal(causal.logical_not())) << "masked keys are NaN, the others are not";
      EXPECT_TRUE(torch::allclose(got.masked_select(causal), want.masked_select(causal), 0, 1e-6)) << h << " " << c;
      total = total + got.nan_to_num(0.0);
    }
    if (h < 0) continue;
    // Σ_c term_c = the scores (eq. 4; this model rotates every dimension and adds no position term).
    ASSERT_FALSE(d.remainder.defined());
    EXPECT_TRUE(torch::allclose(total.masked_select(causal), d.scores[h].masked_select(causal), 1e-5, 1e-5));
  }
  const auto c3 = component_map(maps, 1, 3);
  EXPECT_THAT(c3.title, HasSubstr("L1 H1 · component c3 of the scores, θ = "));
  EXPECT_THAT(c3.title, HasSubstr("wavelength"));
  EXPECT_NEAR(maps.theta[3], std::pow(10000.0, -6.0 / 32.0), 1e-9) << "θ_c = base^(−2c/d_head)";
  EXPECT_EQ(component_map(maps, 2, 0).rows, 0) << "no such head";
  EXPECT_EQ(component_map(maps, 0, 16).rows, 0) << "no such component";

  // The budget: the mean alone, then nothing, each saying so.
  const auto mean_only = component_maps(d, C * T * T, "demo");
  EXPECT_EQ(mean_only.heads, (std::vector<int>{-1}));
  EXPECT_FALSE(mean_only.has(0));
  EXPECT_THAT(mean_only.note, HasSubstr("the head mean only"));
  EXPECT_TRUE(as_tensor(component_map(mean_only, -1, 5)).nan_to_num(7).equal(as_tensor(component_map(maps, -1, 5)).nan_to_num(7)));
  const auto none = component_maps(d, C * T * T - 1, "demo");
  EXPECT_TRUE(none.empty());
  EXPECT_THAT(none.note, HasSubstr("poslens-cli frequencies writes them"));

  // One head decomposed (the CLI's --head): the mean is that head, and it is listed by number.
  const auto one = component_maps(decompose_text(loaded, ids, 1, 1), 1'000'000, "demo");
  EXPECT_EQ(one.heads, (std::vector<int>{-1, 1}));
  EXPECT_TRUE(torch::allclose(as_tensor(component_map(one, 1, 7)).nan_to_num(0),
                              as_tensor(component_map(maps, 1, 7)).nan_to_num(0), 0, 1e-6));
}

}  // namespace
}  // namespace poslens
