// positional-influence: known answers — a model whose blocks write nothing is the identity (the
// last token's own embedding, ‖I‖_F = √d_model, nothing else); the exact Jacobian norms against
// central finite differences of the embedding table (no autograd); the probe estimate against
// the exact norm; the file through the registry's run and read; bad input refused.
#include <torch/torch.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

#include "analysis/analysis_registry.h"
#include "analysis/positional_influence.h"
#include "core/base/error.h"
#include "core/runtime/capture_sink.h"
#include "fixtures.h"
#include "random_model.h"

namespace poslens {
namespace {

using ::testing::HasSubstr;

constexpr char kRope[] = R"([{"type": "rope"}])";

LoadedModel loaded(Transformer model) {
  LoadedModel m;
  m.path = "models/random-rope";
  m.model = std::make_unique<Transformer>(std::move(model));
  return m;
}

/// Distinct ids, so that one row of the embedding table is one position's input.
const std::vector<int64_t> kIds = {3, 1, 4, 15, 9, 2, 6, 5, 8, 7};

TEST(PositionalInfluence, AModelWhoseBlocksWriteNothingIsTheIdentityOnTheLastToken) {
  const auto config = test::small_config(kRope, 2);
  auto weights = test::random_model(config, 5).weights();
  for (auto& layer : weights.layers) {  // W_o = 0, W_down = 0: every resid_post is the embedding
    layer.w_o = torch::zeros_like(layer.w_o);
    layer.w_down = torch::zeros_like(layer.w_down);
    if (layer.b_o.defined()) layer.b_o = torch::zeros_like(layer.b_o);
    if (layer.b_down.defined()) layer.b_down = torch::zeros_like(layer.b_down);
  }
  const auto model = loaded(Transformer(config, weights));
  const auto p = compute_positional_influence(model, kIds);
  EXPECT_EQ(p.probes, 0) << "d_model 16: exact by default";
  ASSERT_EQ(p.influence.sizes(), (std::vector<int64_t>{2, 10}));
  for (int64_t l = 0; l < 2; ++l) {
    EXPECT_NEAR(p.influence[l][9].item<double>(), 4.0, 1e-5) << "‖I₁₆‖_F = 4, layer " << l;
    EXPECT_EQ(p.influence[l].narrow(0, 0, 9).abs().max().item<double>(), 0.0) << "no path from the others";
  }
}

TEST(PositionalInfluence, ExactNormsEqualFiniteDifferencesOfTheEmbeddingTable) {
  const auto config = test::small_config(kRope, 2);
  const auto base = test::random_model(config, 7);
  const auto model = loaded(test::random_model(config, 7));
  const auto p = compute_positional_influence(model, kIds, {0, 0});
  const auto tokens = torch::tensor(kIds, torch::kLong).unsqueeze(0);
  const double eps = 1e-2;
  // h^l_{T−1} with row `row` of the embedding table moved by `delta` along coordinate k.
  auto last_states = [&](int64_t row, int64_t k, double delta) {
    auto w = base.weights();
    c10::InferenceMode inference;
    w.tok_embed = w.tok_embed.clone();
    w.tok_embed[row][k] += delta;
    const Transformer moved(config, w);
    Captures captures;
    moved.forward(tokens, CaptureSpec({"blocks.0.hook_resid_post", "blocks.1.hook_resid_post"}), &captures);
    std::vector<at::Tensor> last;
    for (int l = 0; l < 2; ++l)
      last.push_back(captures.find({HookKind::ResidPost, l, HookStack::Blocks})[0][9].to(torch::kDouble));
    return last;
  };
  for (int64_t i : {0, 4, 8, 9}) {
    std::vector<double> squares(2, 0.0);
    for (int64_t k = 0; k < 16; ++k) {
      const auto plus = last_states(kIds[static_cast<size_t>(i)], k, eps);
      const auto minus = last_states(kIds[static_cast<size_t>(i)], k, -eps);
      for (int l = 0; l < 2; ++l) squares[l] += ((plus[l] - minus[l]) / (2 * eps)).pow(2).sum().item<double>();
    }
    for (int l = 0; l < 2; ++l) {
      const double expected = std::sqrt(squares[l]);
      EXPECT_NEAR(p.influence[l][i].item<double>(), expected, 1e-2 * expected + 1e-4)
          << "layer " << l << ", position " << i;
    }
  }
  EXPECT_GT(p.influence[1][0].item<double>(), 0.0) << "a random model reaches back to the first token";
}

TEST(PositionalInfluence, GaussianProbesEstimateTheExactNorm) {
  const auto model = loaded(test::random_model(test::small_config(kRope, 2), 9));
  const auto exact = compute_positional_influence(model, kIds, {0, 0});
  const auto estimate = compute_positional_influence(model, kIds, {512, 3});
  const auto again = compute_positional_influence(model, kIds, {512, 3});
  EXPECT_EQ(estimate.probes, 512);
  EXPECT_TRUE(torch::equal(estimate.influence, again.influence)) << "a fixed seed gives the same draws";
  // 512 draws: the norm's relative spread is about 1/√512 ≈ 4 %; 15 % is ~4 spreads.
  EXPECT_TRUE(torch::allclose(estimate.influence, exact.influence, 0.15, 1e-4))
      << estimate.influence << "\n" << exact.influence;
  EXPECT_FALSE(torch::equal(estimate.influence, exact.influence)) << "an estimate, not the exact pass";
}

TEST(PositionalInfluence, TheRegistrysRunWritesAFileItsReadGivesBack) {
  const auto model = loaded(test::random_model(test::small_config(kRope, 2), 4));
  const AnalysisInput input{{1, 2, 3, 4, 5, 6}, {"<s>", "a", "b", "c", "d", "e"}};
  const auto& entry = analysis_entry("positional-influence");
  ASSERT_NE(entry.run, nullptr);
  ASSERT_NE(entry.read, nullptr);
  const auto r = entry.run(model, input, {});
  EXPECT_TRUE(r.maps.empty());
  ASSERT_EQ(r.curves.y.size(), 2u) << "one curve per layer";
  EXPECT_EQ(r.curves.x.size(), 6u);
  EXPECT_TRUE(r.curves.log_y);
  EXPECT_THAT(r.summary, HasSubstr("2 layers, T = 6"));
  EXPECT_THAT(r.summary, HasSubstr("× one forward"));
  EXPECT_EQ(std::count(r.csv.begin(), r.csv.end(), '\n'), 1 + 2 * 6);
  EXPECT_THAT(r.csv, HasSubstr("layer,position,distance,token,influence\n0,0,5,\"<s>\","));

  const auto dir = test::scratch_dir();
  ExportMetadata meta;
  meta.tool_version = POSLENS_VERSION;
  meta.checkpoint = model.path;
  const auto good = (dir / "p.h5").string();
  r.write_hdf5(good, meta);
  const Hdf5Reader file(good);
  ASSERT_NE(analysis_in_file(file), nullptr);
  EXPECT_STREQ(analysis_in_file(file)->name, "positional-influence");
  const auto back = entry.read(file);
  EXPECT_EQ(back.csv, r.csv) << "the same numbers and labels";
  EXPECT_EQ(back.summary, r.summary) << "the cost read back too";
  EXPECT_EQ(back.title, r.title);
  EXPECT_EQ(back.curves.y, r.curves.y);

  meta.tool_version = "0.0.1";
  const auto old = (dir / "old.h5").string();
  r.write_hdf5(old, meta);
  EXPECT_THAT(test::error_of([&] { entry.read(Hdf5Reader(old)); }), HasSubstr("old.h5: written by PosLens 0.0.1"));
}

TEST(PositionalInfluence, BadInputIsRefused) {
  const auto model = loaded(test::random_model(test::small_config(kRope, 2), 4));
  EXPECT_THAT(test::error_of([&] { compute_positional_influence(model, {3}); }), HasSubstr("at least two tokens"));
  EXPECT_THAT(test::error_of([&] { compute_positional_influence(model, {3, 4}, {-2, 0}); }),
              HasSubstr("probes must be ≥ 0"));
  EXPECT_THAT(test::error_of([&] { compute_positional_influence(model, {3, 400}); }), HasSubstr("400"));
  const std::vector<int64_t> long_input(200000, 1);  // ~3.8 TB of graph: refused before any forward
  EXPECT_THAT(test::error_of([&] { compute_positional_influence(model, long_input); }),
              HasSubstr("of memory available: give a shorter input"));
}

}  // namespace
}  // namespace poslens
