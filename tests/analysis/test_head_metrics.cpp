// Head metrics streamed from a forward pass's blocks (HeadMetricsSink) against head_metrics()
// of the whole maps in float64: every metric to 1e-6 relative (the pattern is float32), for
// additive position terms (the position share), rotary models, sliding windows and batches,
// and blocks of 3 rows so the diagonal of the previous-token metric crosses block boundaries.
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <cmath>

#include "analysis/head_metrics.h"
#include "random_model.h"

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
  const auto ids = torch::randint(0, 30, {B, T}, torch::kLong);

  HeadMetricsSink sink(2, 4, share);
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
                             share ? stack(HookKind::PosScores, b) : at::Tensor())
                    .values / static_cast<double>(B);
  if (B > 1) expected.select(2, 4).fill_(NAN);  // position share of a batch: not averaged
  for (int64_t m = 0; m < (B > 1 ? 4 : 5); ++m)
    for (int64_t l = 0; l < 2; ++l)
      for (int64_t h = 0; h < 4; ++h) {
        const double want = expected[l][h][m].item<double>(), got = streamed[l][h][m].item<double>();
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(got)) << head_metric_names()[m];
          continue;
        }
        EXPECT_NEAR(got, want, 1e-6 * std::max(1.0, std::abs(want)))
            << head_metric_names()[m] << " of layer " << l << " head " << h;
      }
  EXPECT_EQ(std::isnan(streamed[0][0][4].item<double>()), !share);
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

TEST(HeadMetricsCsv, OneRowPerHeadNineDigitsAndEmptyForNaN) {
  const std::vector<double> values = {1.5, 2, 0.25, 1.0 / 3, NAN, 0.125, -3, 0, 1e-12, 7};
  EXPECT_EQ(head_metrics_csv(1, 2, values),
            "layer,head,entropy,mean_distance,sink,previous_token,position_share\n"
            "0,0,1.5,2,0.25,0.333333333,\n"
            "0,1,0.125,-3,0,1e-12,7\n");
}

}  // namespace
}  // namespace poslens
