// What analyses read from an encoding without running the model (position_encoding.h):
// static position scores of the additive methods, rotary frequencies after scaling, HoPE's
// cut, CoPE's weights, absolute tables. Checked against the kernels' own formulas and values
// computed here.
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "core/position/alibi.h"
#include "core/position/components.h"
#include "core/position/cope.h"
#include "core/position/hope.h"
#include "core/position/rope.h"
#include "core/position/sinusoidal.h"

namespace poslens {
namespace {

const PositionContext kContext{/*d_model=*/8, /*n_heads=*/4, /*d_head=*/8, /*n_layers=*/2,
                               /*n_ctx=*/64, /*causal=*/true};

PositionWeights no_weights() {
  PositionWeights w;
  w.layers.resize(2);
  return w;
}

std::unique_ptr<PositionEncoding> make(const std::string& json_list,
                                       const PositionWeights& weights = no_weights()) {
  std::vector<PositionComponentSpec> specs;
  for (const auto& item : nlohmann::json::parse(json_list))
    specs.push_back({item["type"].get<std::string>(), item.dump()});
  return make_components_encoding(specs, kContext, weights);
}

TEST(AnalysisApi, AlibiStaticScoresAreMinusSlopeTimesDistance) {
  const auto pe = make(R"([{"type": "alibi"}])");
  const auto scores = pe->static_position_scores(1, 5);
  ASSERT_EQ(scores.sizes(), (at::IntArrayRef{4, 5, 5}));
  const auto slopes = alibi_slopes(4);
  for (int h = 0; h < 4; ++h)
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j <= i; ++j)
        EXPECT_NEAR(scores[h][i][j].item<double>(), -slopes[h] * (i - j), 1e-6);
  EXPECT_FALSE(pe->rotary_info().has_value());
  EXPECT_EQ(pe->cope(), nullptr);
  EXPECT_FALSE(pe->position_table(3).defined());
}

TEST(AnalysisApi, ComposedStaticScoresSumTheirParts) {
  PositionWeights w = no_weights();
  w.shared["kerple_p"] = torch::tensor({0.5, 1.0, 1.5, 2.0}, torch::kFloat32);
  w.shared["kerple_a"] = torch::tensor({0.1, 0.2, 0.3, 0.4}, torch::kFloat32);
  const auto both = make(R"([{"type": "alibi"}, {"type": "kerple", "shared": true}])", w);
  const auto kerple = make(R"([{"type": "kerple", "shared": true}])", w);
  const auto alibi = make(R"([{"type": "alibi"}])");
  EXPECT_TRUE(torch::allclose(both->static_position_scores(0, 6),
                              alibi->static_position_scores(0, 6) +
                                  kerple->static_position_scores(0, 6)));
}

TEST(AnalysisApi, RotaryInfoGivesThetaAfterScaling) {
  const auto plain = make(R"([{"type": "rope", "rope_theta": 100, "pairing": "interleaved"}])");
  const auto info = plain->rotary_info();
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->pairing, RopePairing::Interleaved);
  EXPECT_EQ(info->rotary_dim, 8);
  EXPECT_EQ(info->kept_components, 4);
  ASSERT_EQ(info->theta.sizes(), (at::IntArrayRef{4}));
  for (int c = 0; c < 4; ++c)  // theta_c = 100^(-2c/8)
    EXPECT_NEAR(info->theta[c].item<double>(), std::pow(100.0, -2.0 * c / 8), 1e-12);

  const auto linear = make(
      R"([{"type": "rope", "rope_theta": 100, "rotary_dim": 4, "rope_scaling": {"rope_type": "linear", "factor": 4}}])");
  const auto scaled = linear->rotary_info();
  ASSERT_TRUE(scaled.has_value());
  EXPECT_EQ(scaled->rotary_dim, 4);
  EXPECT_EQ(scaled->pairing, RopePairing::HalfSplit);
  for (int c = 0; c < 2; ++c)  // partial rotary: spread over rotary_dim, then / factor
    EXPECT_NEAR(scaled->theta[c].item<double>(), std::pow(100.0, -2.0 * c / 4) / 4, 1e-12);
  EXPECT_FALSE(linear->static_position_scores(0, 4).defined()) << "RoPE adds no score term";
}

TEST(AnalysisApi, HopeReportsItsCut) {
  const auto pe = make(R"([{"type": "hope", "rope_theta": 10000, "L": 64}])");
  const auto info = pe->rotary_info();
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->rotary_dim, 8);
  EXPECT_EQ(info->kept_components, hope_kept_components(10000, 8, 64));
  EXPECT_LT(info->kept_components, 4) << "HoPE drops the slow components";
}

TEST(AnalysisApi, CopeExposesItsWeightsAndHasNoStaticScores) {
  PositionWeights w = no_weights();
  for (auto& layer : w.layers) layer["cope_pos_emb"] = torch::randn({8, 5});
  const auto pe = make(R"([{"type": "rope"}, {"type": "cope", "npos_max": 5}])", w);
  ASSERT_NE(pe->cope(), nullptr);
  EXPECT_EQ(pe->cope()->options().npos_max, 5);
  EXPECT_EQ(pe->cope()->options().gates, CopeGateSource::Keys);
  EXPECT_TRUE(pe->cope()->layer_weights(1).pos_emb.is_same(w.layers[1].at("cope_pos_emb")));
  EXPECT_FALSE(pe->static_position_scores(0, 4).defined()) << "CoPE's term depends on the input";
  EXPECT_TRUE(pe->rotary_info().has_value()) << "the RoPE part of CoPE+RoPE";
}

TEST(AnalysisApi, AbsoluteTables) {
  const auto sinusoidal = make(R"([{"type": "sinusoidal"}])");
  EXPECT_TRUE(torch::allclose(sinusoidal->position_table(6),
                              sinusoidal_embedding(torch::arange(6), 8)));
  PositionWeights w = no_weights();
  w.shared["pos_embed"] = torch::randn({64, 8});
  const auto learned = make(R"([{"type": "learned_absolute"}])", w);
  EXPECT_TRUE(torch::equal(learned->position_table(10), w.shared["pos_embed"].slice(0, 0, 10)));
  EXPECT_THROW(learned->position_table(65), Error);
}

}  // namespace
}  // namespace poslens
