// The U-shape probe across models of different encodings (analysis/u_shape.h, Chen et al. 2024 Fig. 1):
// each model's curve is its own probe's head mean, the tokens are shared, curves are
// standardised per curve, the minimum's position, the file, and the errors.
#include <torch/torch.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "analysis/checkpoint_series.h"
#include "analysis/u_shape.h"
#include "core/formats/hdf5_reader.h"
#include "fixtures.h"
#include "random_model.h"

namespace poslens {
namespace {

using ::testing::HasSubstr;

std::string write_model(const std::filesystem::path& dir, const std::string& name, const std::string& pe,
                        int layers = 2) {
  auto config = test::small_config(pe);
  config.n_layers = layers;
  const auto path = (dir / name).string();
  write_poslens_model(path, config, test::random_model(config, name.size()).weights());
  return path;
}

TEST(UShape, EachCurveIsThatModelsProbeOnSharedTokens) {
  const auto dir = test::scratch_dir();
  const std::vector<std::string> paths = {write_model(dir, "abs", R"([{"type": "learned_absolute"}])"),
                                          write_model(dir, "rope", R"([{"type": "rope"}])"),
                                          write_model(dir, "kerple", R"([{"type": "kerple"}])")};
  LoadOptions load;
  load.device = "cpu";
  ProbeOptions options;
  options.length = 12;
  options.samples = 5;
  options.bos_id = 0;
  const auto u = compare_u_shapes(paths, load, options);
  ASSERT_EQ(u.scores.sizes(), (std::vector<int64_t>{3, 2, 12}));
  EXPECT_EQ(u.T, 12);
  EXPECT_EQ(u.n_samples, 5);
  EXPECT_EQ(u.checkpoints, paths);
  EXPECT_THAT(u.encodings[1], HasSubstr("rope"));

  // The same as probing each model alone with the first model's tokens, averaged over heads.
  const auto first = run_probe(load_checkpoint(paths[0], load), options);
  ProbeOptions same = options;
  same.tokens = first.tokens;
  for (size_t m = 0; m < paths.size(); ++m) {
    const auto alone = run_probe(load_checkpoint(paths[m], load), same);
    EXPECT_TRUE(torch::allclose(u.scores[static_cast<int64_t>(m)], alone.scores.to(torch::kDouble).mean(1), 1e-6, 1e-9))
        << paths[m];
  }
  EXPECT_FALSE(torch::allclose(u.scores[0], u.scores[1]));

  const auto curves = u_shape_curves(u, -1, "t");
  ASSERT_EQ(curves.y.size(), 6u);  // 3 models × 2 layers
  EXPECT_EQ(curves.colour, (std::vector<int>{0, 0, 1, 1, 2, 2}));
  EXPECT_EQ(curves.dash, (std::vector<int>{0, 1, 0, 1, 0, 1}));
  for (const auto& y : curves.y) {  // standardised over keys 1..T−1; BOS not drawn
    EXPECT_TRUE(std::isnan(y[0]));
    double sum = 0, squares = 0;
    for (size_t k = 1; k < y.size(); ++k) sum += y[k];
    const double mean = sum / 11;
    for (size_t k = 1; k < y.size(); ++k) squares += (y[k] - mean) * (y[k] - mean);
    EXPECT_NEAR(mean, 0, 1e-9);
    EXPECT_NEAR(std::sqrt(squares / 11), 1, 1e-9);
  }
  EXPECT_EQ(u_shape_curves(u, 1, "t").y.size(), 3u);
  EXPECT_THAT(test::error_of([&] { u_shape_curves(u, 2, "t"); }), HasSubstr("layer 2 is outside 0..1"));

  // The file: scores and the minimum as computed, the models named.
  const auto file = (dir / "u.h5").string();
  write_u_shape_hdf5(file, u);
  const Hdf5Reader in(file);
  EXPECT_TRUE(in.read("/analysis/u_shape/scores").allclose(u.scores));
  EXPECT_TRUE(in.read("/analysis/u_shape/minimum").equal(u_shape_minimum_position(u)));
  EXPECT_EQ(in.string_list_attribute("/analysis/u_shape", "checkpoints"), paths);
  EXPECT_EQ(in.int_attribute("/analysis/u_shape", "T"), 12);
}

TEST(UShape, MinimumPositionTellsADecayFromAU) {
  UShapes u;
  u.T = 6;
  // Keys 1..5: a decay (lowest at key 1), a U (lowest at key 3), a rise to the end (key 5).
  u.scores = torch::tensor({{{9.0, 0.0, 1.0, 2.0, 3.0, 4.0}}, {{9.0, 3.0, 1.0, 0.0, 1.0, 3.0}},
                            {{9.0, 4.0, 3.0, 2.0, 1.0, 0.0}}},
                           torch::kDouble);
  const auto minimum = u_shape_minimum_position(u);
  EXPECT_DOUBLE_EQ(minimum[0][0].item<double>(), 0.0);
  EXPECT_DOUBLE_EQ(minimum[1][0].item<double>(), 0.5);
  EXPECT_DOUBLE_EQ(minimum[2][0].item<double>(), 1.0);
}

TEST(UShape, NeedsTwoModelsOfOneDepth) {
  const auto dir = test::scratch_dir();
  const auto a = write_model(dir, "a", R"([{"type": "rope"}])");
  const auto b = write_model(dir, "deeper", R"([{"type": "rope"}])", 3);
  LoadOptions load;
  load.device = "cpu";
  ProbeOptions options;
  options.length = 8;
  options.samples = 2;
  options.bos_id = 0;
  EXPECT_THAT(test::error_of([&] { compare_u_shapes({a}, load, options); }), HasSubstr("two or more"));
  EXPECT_THAT(test::error_of([&] { compare_u_shapes({a, b}, load, options); }), HasSubstr("compare models of one depth"));
}

TEST(CheckpointLabel, RunCheckpointsAreNamedWithTheirRun) {
  EXPECT_EQ(checkpoint_label("/x/runs/rope-seed0/step-003000"), "rope-seed0/step-003000");
  EXPECT_EQ(checkpoint_label("/x/runs/rope-seed0/step-003000/"), "rope-seed0/step-003000");
  EXPECT_EQ(checkpoint_label("/x/demos/flipflop-rope"), "flipflop-rope");
}

}  // namespace
}  // namespace poslens
