// The streamed position map (position_map with a head selection and a consumer) against the
// whole maps of the same model: the selected heads' pattern, position-only map and absolute
// terms arrive block by block equal to the whole ones, other heads never arrive, pooled maps
// are pool_heatmap of the whole, and CoPE counting is the same. For every method: additive,
// rotary (the probe), CoPE + rotary, absolute, uniform.
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "analysis/heatmap_pooling.h"
#include "analysis/position_map.h"
#include "core/base/error.h"
#include "random_model.h"

namespace poslens {
namespace {

LoadedModel loaded(const char* components) {
  LoadedModel m;
  m.path = "in-memory";
  auto config = test::small_config(components, 2);
  config.bos_token_id = 0;
  m.model = std::make_unique<Transformer>(test::random_model(config));
  return m;
}

class StreamedPositionMap : public ::testing::TestWithParam<const char*> {};

TEST_P(StreamedPositionMap, SelectedHeadsEqualTheWholeMaps) {
  const auto model = loaded(GetParam());
  torch::manual_seed(8);
  const int64_t T = 23;
  const auto t = torch::randint(1, 30, {T}, torch::kLong);
  const std::vector<int64_t> ids(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + T);
  PositionMapOptions options;
  options.probe_samples = 6;
  const auto whole = position_map_whole(*&model, ids, options);

  const HeadSelection heads{{1, 2}, {0, 1}};
  std::map<std::tuple<PositionMapKind, int, int>, at::Tensor> assembled;
  PooledPositionMaps pooled(T, 5);
  const auto r = position_map(model, ids, options, heads, [&](const PositionMapBlock& b) {
    auto& map = assembled[{b.kind, b.layer, b.head}];
    if (!map.defined()) map = torch::zeros({T, T});
    map.narrow(0, b.q_begin, b.values.size(0)).narrow(1, b.k_begin, b.values.size(1)).copy_(b.values);
    pooled.add(b);
  });
  EXPECT_EQ(r.methods, whole.methods);
  const auto hidden = allowed_keys(model.model->config(), T, torch::kCPU).logical_not();
  for (const auto& [key, map] : assembled) {
    const auto [kind, layer, head] = key;
    EXPECT_TRUE((layer == 1 && head == 2) || (layer == 0 && head == 1)) << "head not selected";
    at::Tensor expected;
    if (kind == PositionMapKind::Pattern) expected = whole.pattern[layer][head];
    else if (kind == PositionMapKind::PositionOnly) expected = whole.position_map[layer][head];
    else {
      ASSERT_TRUE(whole.absolute);
      const auto& a = *whole.absolute;
      expected = (kind == PositionMapKind::TokenToken ? a.token_token
                  : kind == PositionMapKind::TokenPosition ? a.token_position
                  : kind == PositionMapKind::PositionToken ? a.position_token
                  : kind == PositionMapKind::PositionPosition ? a.position_position : a.bias)[head];
    }
    EXPECT_TRUE(torch::allclose(map, expected, 1e-5, 1e-6)) << to_string(kind) << " L" << layer << " H" << head;
    // Pooled: the max over 5 × 5 cells of the visible entries.
    const auto want = pool_heatmap(expected.masked_fill(hidden, -INFINITY), 5, 5);
    const auto got = pooled.find(kind, layer, head).contiguous();
    for (int64_t i = 0; i < want.rows * want.cols; ++i) {
      const float w = want.values[static_cast<size_t>(i)], g = got.data_ptr<float>()[i];
      if (std::isnan(w)) EXPECT_TRUE(std::isnan(g));
      else EXPECT_NEAR(g, w, 1e-5) << to_string(kind) << " cell " << i;
    }
  }
  EXPECT_TRUE(assembled.count({PositionMapKind::PositionOnly, 1, 2}));
  EXPECT_EQ(assembled.count({PositionMapKind::TokenToken, 0, 1}), whole.absolute ? 1u : 0u);
  ASSERT_EQ(r.cope.has_value(), whole.cope.has_value());
  if (r.cope) {
    EXPECT_TRUE(torch::allclose(r.cope->mean_gate_per_token, whole.cope->mean_gate_per_token));
  }
}

INSTANTIATE_TEST_SUITE_P(Methods, StreamedPositionMap,
                         ::testing::Values(R"([{"type": "alibi"}])", R"([{"type": "rope"}])",
                                           R"([{"type": "rope"}, {"type": "cope", "npos_max": 6}])",
                                           R"([{"type": "learned_absolute"}])", "[]"));

TEST(StreamedPositionMap, NoSelectedHeadHandsOutNothing) {
  const auto model = loaded(R"([{"type": "alibi"}])");
  // No selected head: nothing is handed out; the methods still come back.
  int blocks = 0;
  const auto r = position_map(model, {1, 2, 3}, {}, HeadSelection{}, [&](const PositionMapBlock&) { ++blocks; });
  EXPECT_EQ(blocks, 0);
  EXPECT_EQ(r.methods.size(), 2u);
}

}  // namespace
}  // namespace poslens
