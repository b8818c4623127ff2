// Head metrics streamed from a forward pass's blocks (HeadMetricsSink) against head_metrics()
// of the whole maps in float64: every metric to 1e-6 relative (the pattern is float32), for
// additive position terms (the position share), rotary models, sliding windows and batches,
// and blocks of 3 rows so the diagonal of the previous-token metric crosses block boundaries.
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "analysis/heads.h"
#include "core/base/error.h"
#include "core/formats/safetensors.h"
#include "core/runtime/checkpoint.h"
#include "random_model.h"
#include "reference_ids.h"

namespace poslens {
namespace {

struct Case {
  const char* name;
  const char* components;
  int64_t window = 0;
  int64_t batch = 1;
};

class StreamedHeadMetrics : public ::testing::TestWithParam<Case> {};

TEST_P(StreamedHeadMetrics, EqualTheWholeMapMetrics) {
  auto config = test::small_config(GetParam().components, 2);
  config.sliding_window = GetParam().window;
  const auto model = test::random_model(config);
  const bool share = model.position_encoding().has_position_scores();
  c10::InferenceMode inference;
  torch::manual_seed(4);
  const int64_t T = 29, B = GetParam().batch;
  // A small id range, so duplicate and induction entries are many.
  const auto ids = torch::randint(0, 6, {B, T}, torch::kLong);

  HeadMetricsSink sink(2, 4, share, ids);
  Captures whole;
  CaptureSink capture(CaptureSpec::all(), whole);
  SinkFanout both({&sink, &capture});
  ForwardOptions small;
  small.blocking = {3, 4};
  model.forward(ids, both, {}, small);
  const auto streamed = sink.result().values;

  const auto stack = [&](HookKind kind, int64_t b) {
    return torch::stack({whole.find({kind, 0})[b], whole.find({kind, 1})[b]}).to(torch::kDouble);
  };
  auto expected = torch::zeros_like(streamed);
  for (int64_t b = 0; b < B; ++b)  // a batch averages over every sequence's queries
    expected += head_metrics(stack(HookKind::Pattern, b), allowed_keys(config, T, torch::kCPU),
                             share ? stack(HookKind::AttnScores, b) : at::Tensor(),
                             share ? stack(HookKind::PosScores, b) : at::Tensor(), ids[b])
                    .values / static_cast<double>(B);
  const auto& names = head_metric_names();
  const int64_t n_metrics = static_cast<int64_t>(names.size());
  const int64_t share_column = std::find(names.begin(), names.end(), "position_share") - names.begin();
  for (int64_t m = 0; m < n_metrics; ++m) {
    if (B > 1 && m == share_column) continue;  // position share of a batch: not averaged
    for (int64_t l = 0; l < 2; ++l)
      for (int64_t h = 0; h < 4; ++h) {
        const double want = expected[l][h][m].item<double>(), got = streamed[l][h][m].item<double>();
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(got)) << names[m];
          continue;
        }
        EXPECT_NEAR(got, want, 1e-6 * std::max(1.0, std::abs(want)))
            << names[m] << " of layer " << l << " head " << h;
      }
  }
  EXPECT_EQ(std::isnan(streamed[0][0][share_column].item<double>()), !share);
}

INSTANTIATE_TEST_SUITE_P(Models, StreamedHeadMetrics,
                         ::testing::Values(Case{"alibi", R"([{"type": "alibi"}])"},
                                           Case{"rope", R"([{"type": "rope"}])"},
                                           Case{"cope_window", R"([{"type": "cope", "npos_max": 5}])", 7},
                                           Case{"t5_batch", R"([{"type": "t5", "num_buckets": 8, "max_distance": 12}])", 0, 3}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace poslens

namespace poslens {
namespace {

// gpt-oss's learned sinks: the learned_sink column is the mass HF's own patterns leave to the
// sink (1 − their row sums, tests/data/models/gpt_oss), per layer and head; NaN for a model
// without sinks.
TEST(HeadMetrics, LearnedSinkShareIsWhatTheKeysDoNotTake) {
  const std::string dir = std::string(POSLENS_SOURCE_DIR) + "/tests/data/models/gpt_oss";
  const auto loaded = load_checkpoint(dir, {"cpu", "float32", ""});
  const SafetensorsFile ref(dir + "/reference.safetensors");
  const auto ids = test::reference_ids(dir);
  HeadMetricsOptions no_induction;
  no_induction.induction_length = 0;
  const auto m = compute_head_metrics(loaded, ids, {}, no_induction);
  const auto& names = head_metric_names();
  const int64_t column = std::find(names.begin(), names.end(), "learned_sink") - names.begin();
  ASSERT_LT(column, static_cast<int64_t>(names.size()));
  for (int64_t l = 0; l < 4; ++l) {
    const auto expected = 1.0 - ref.load("attentions." + std::to_string(l)).to(torch::kDouble)[0].sum(-1).mean(-1);
    for (int64_t h = 0; h < 4; ++h)
      EXPECT_NEAR(m.values[l][h][column].item<double>(), expected[h].item<double>(), 1e-6) << "layer " << l << " head " << h;
  }
  EXPECT_GT(m.values.select(2, column).max().item<double>(), 0.5);  // a head gives the sink most of its rows

  const auto smollm3 = load_checkpoint(std::string(POSLENS_SOURCE_DIR) + "/tests/data/models/smollm3", {"cpu", "float32", ""});
  const auto without = compute_head_metrics(smollm3, {3, 4, 5, 6}, {}, no_induction);
  EXPECT_TRUE(torch::isnan(without.values.select(2, column)).all().item<bool>());
}

TEST(HeadMetricsCsv, OneRowPerHeadNineDigitsAndEmptyForNaN) {
  std::vector<double> values = {1.5, 2, 0.25, 0.5, 0.75, 1, 1.0 / 3, 0, 0.5, NAN, NAN,
                                0.125, -3, 0, 0, 0, 0, 1e-12, 1, NAN, 7, 0.25};
  EXPECT_EQ(head_metrics_csv(1, 2, values),
            "layer,head,entropy,mean_distance,sink,sink_2,sink_3,sink_4,previous_token,"
            "duplicate_token,induction,position_share,learned_sink\n"
            "0,0,1.5,2,0.25,0.5,0.75,1,0.333333333,0,0.5,,\n"
            "0,1,0.125,-3,0,0,0,0,1e-12,1,,7,0.25\n");
}

// TransformerLens's head_detector on the patterns of tests/data/analysis/head_detectors.json
// (TL's own functions made the scores: tools/make_detector_reference.py): head_metrics()'s
// previous_token, duplicate_token and induction equal them.
TEST(HeadDetectors, EqualTransformerLensScores) {
  std::ifstream file(std::string(POSLENS_SOURCE_DIR) + "/tests/data/analysis/head_detectors.json");
  ASSERT_TRUE(file) << "tests/data/analysis/head_detectors.json is missing";
  const auto reference = nlohmann::json::parse(file);
  ASSERT_GE(reference.at("cases").size(), 3u);
  for (const auto& c : reference.at("cases")) {
    const auto tokens = c.at("tokens").get<std::vector<int64_t>>();
    const auto rows = c.at("pattern").get<std::vector<std::vector<std::vector<double>>>>();
    const int64_t H = static_cast<int64_t>(rows.size()), T = static_cast<int64_t>(tokens.size());
    auto pattern = torch::zeros({1, H, T, T}, torch::kDouble);
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < T; ++j) pattern[0][h][i][j] = rows[h][i][j];
    const auto ids = torch::tensor(tokens, torch::kLong);
    const auto got = head_metrics(pattern, torch::ones({T, T}, torch::kBool).tril(), {}, {}, ids).values[0];
    for (const std::string name : {"previous_token", "duplicate_token", "induction"}) {
      const auto column = std::find(head_metric_names().begin(), head_metric_names().end(), name) -
                          head_metric_names().begin();
      const auto want = c.at("scores").at(name).get<std::vector<double>>();
      ASSERT_EQ(static_cast<int64_t>(want.size()), H);
      for (int64_t h = 0; h < H; ++h)
        EXPECT_NEAR(got[h][column].item<double>(), want[h], 1e-12)
            << c.at("name").get<std::string>() << " head " << h << " " << name;
    }
  }
}

TEST(HeadDetectors, InductionSequenceRepeatsRandomTokensAfterBos) {
  ModelConfig config;
  config.vocab_size = 50;
  config.n_ctx = 64;
  config.bos_token_id = 7;
  const auto ids = induction_tokens(config, 20, 3);
  ASSERT_EQ(ids.size(), 41u);
  EXPECT_EQ(ids[0], 7);
  for (size_t i = 1; i <= 20; ++i) {
    EXPECT_EQ(ids[i], ids[i + 20]);
    EXPECT_NE(ids[i], 7);
    EXPECT_GE(ids[i], 0);
    EXPECT_LT(ids[i], 50);
  }
  EXPECT_EQ(induction_tokens(config, 20, 3), ids);   // seeded
  EXPECT_NE(induction_tokens(config, 20, 4), ids);
  EXPECT_THROW(induction_tokens(config, 40, 0), Error);  // 81 > n_ctx
  EXPECT_THROW(induction_tokens(config, 0, 0), Error);
}

// Hand-made heads on [1, 5, 6, 7, 5, 6, 7]: one looks at the previous token, one at the token
// after the earlier copy from the second copy on (the first token before that).
TEST(HeadDetectors, HandMadeHeadsScoreAsTheyAttend) {
  const std::vector<int64_t> tokens = {1, 5, 6, 7, 5, 6, 7};
  const int64_t T = 7;
  auto pattern = torch::zeros({1, 2, T, T}, torch::kDouble);
  for (int64_t i = 0; i < T; ++i) {
    pattern[0][0][i][std::max<int64_t>(i - 1, 0)] = 1;  // previous token
    // induction: at the second copy, attend to the token after the first copy's occurrence
    pattern[0][1][i][i >= 4 ? i - 2 : 0] = 1;
  }
  const auto m = head_metrics(pattern, torch::ones({T, T}, torch::kBool).tril(), {}, {},
                              torch::tensor(tokens, torch::kLong)).values[0];
  const auto col = [](const std::string& n) {
    return std::find(head_metric_names().begin(), head_metric_names().end(), n) - head_metric_names().begin();
  };
  EXPECT_NEAR(m[0][col("previous_token")].item<double>(), 6.0 / 7, 1e-12);  // row 0 has no previous
  EXPECT_NEAR(m[0][col("duplicate_token")].item<double>(), 0.0, 1e-12);
  // rows 4..6 attend to j = i − 2, where t_{j−1} = t_i: 3 of 7 rows
  EXPECT_NEAR(m[1][col("induction")].item<double>(), 3.0 / 7, 1e-12);
  EXPECT_NEAR(m[1][col("sink")].item<double>(), 4.0 / 7, 1e-12);
  EXPECT_NEAR(m[1][col("sink_4")].item<double>(), 6.0 / 7, 1e-12);
}

}  // namespace
}  // namespace poslens
