// needle-sweep: the inputs it builds (pieces where they belong, at every depth; bad specs
// refused), the segment masses by hand on a model whose attention is uniform, the masses
// against the whole captured pattern and the loss against the full logits on a RoPE model, and
// the file through the registry's read (round trip; a file with shapes that disagree refused).
#include <torch/torch.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "analysis/analysis_registry.h"
#include "analysis/needle_sweep.h"
#include "core/base/error.h"
#include "core/runtime/capture_sink.h"
#include "fixtures.h"
#include "random_model.h"

namespace poslens {
namespace {

using ::testing::HasSubstr;

NeedleSpec small_spec() {
  NeedleSpec spec;
  for (int64_t t = 0; t < 20; ++t) spec.haystack.push_back(2 + t % 20);
  spec.needle = {25, 26};
  spec.query = {27};
  spec.answer = {28, 29};
  spec.bos = 1;
  spec.depths = {0.0, 0.5, 1.0};
  return spec;
}

LoadedModel loaded(Transformer model) {
  LoadedModel m;
  m.path = "models/random";
  m.model = std::make_unique<Transformer>(std::move(model));
  return m;
}

/// A NoPE model whose queries are all zero: every score is 0, so each row attends uniformly to
/// the keys it may see (1 / (i + 1) each under the causal mask).
LoadedModel uniform_attention_model() {
  const auto config = test::small_config("[]");
  auto random = test::random_model(config, 5);
  auto weights = random.weights();
  torch::NoGradGuard no_grad;
  for (auto& layer : weights.layers) {
    layer.w_q = torch::zeros_like(layer.w_q);
    if (layer.b_q.defined()) layer.b_q = torch::zeros_like(layer.b_q);
  }
  return loaded(Transformer(config, weights));
}

TEST(NeedleSweep, TheInputHoldsBosHaystackNeedleQueryAndAnswerInOrder) {
  auto spec = small_spec();
  auto in = needle_input(spec, 0.0);
  ASSERT_EQ(in.ids.size(), 1u + 20 + 2 + 1 + 2);
  EXPECT_EQ(in.ids[0], 1);
  EXPECT_EQ(in.needle_begin, 1);
  EXPECT_EQ(in.ids[1], 25);
  EXPECT_EQ(in.ids[3], 2);  // the haystack follows the needle
  EXPECT_EQ(in.query_begin, 23);
  EXPECT_EQ(in.answer_begin, 24);
  EXPECT_EQ(in.ids.back(), 29);
  in = needle_input(spec, 1.0);
  EXPECT_EQ(in.needle_begin, 21);  // after all 20 haystack tokens, right before the query
  EXPECT_EQ(in.ids[20], 21);
  in = needle_input(spec, 0.5);
  EXPECT_EQ(in.needle_begin, 11);
  spec.length = 15;  // 15 − (BOS, needle, query, answer: 6) = 9 haystack tokens
  in = needle_input(spec, 1.0);
  EXPECT_EQ(in.ids.size(), 15u);
  EXPECT_EQ(in.needle_begin, 10);
  EXPECT_EQ(evenly_spaced_depths(5), (std::vector<double>{0, 0.25, 0.5, 0.75, 1}));
}

TEST(NeedleSweep, BadSpecsAreRefusedWithWhatIsWrong) {
  auto spec = small_spec();
  EXPECT_THROW(
      {
        try {
          needle_input(spec, 1.5);
        } catch (const Error& e) {
          EXPECT_THAT(e.what(), HasSubstr("depth 1.5 is outside [0, 1]"));
          throw;
        }
      },
      Error);
  spec.length = 40;
  try {
    needle_input(spec, 0.5);
    ADD_FAILURE() << "a haystack too short for the length";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("the haystack has 20 tokens, fewer than the 34"));
  }
  spec.length = 6;
  EXPECT_THROW(needle_input(spec, 0.5), Error);  // no room for the haystack
  spec = small_spec();
  spec.answer.clear();
  EXPECT_THROW(needle_input(spec, 0.5), Error);
  spec = small_spec();
  spec.needle.clear();
  EXPECT_THROW(needle_input(spec, 0.5), Error);
  EXPECT_THROW(evenly_spaced_depths(0), Error);
}

TEST(NeedleSweep, UniformAttentionGivesEachSegmentItsShareOfTheVisibleKeys) {
  const auto model = uniform_attention_model();
  auto spec = small_spec();
  spec.begin_tokens = 3;
  const auto s = compute_needle_sweep(model, spec);
  ASSERT_EQ(s.mass.sizes(), (std::vector<int64_t>{3, 2, 4, 4}));
  EXPECT_EQ(s.length, 26);
  for (int64_t k = 0; k < 3; ++k) {
    const auto in = needle_input(spec, s.depths[static_cast<size_t>(k)]);
    EXPECT_EQ(s.needle_begin[k].item<int64_t>(), in.needle_begin);
    // By hand: rows i = answer_begin − 1 … T − 2 each see i + 1 keys with weight 1 / (i + 1).
    const double begin = std::min<int64_t>(3, in.needle_begin);
    double expected[4] = {0, 0, 0, 0};
    int rows = 0;
    for (int64_t i = in.answer_begin - 1; i < s.length - 1; ++i, ++rows) {
      const double seen = static_cast<double>(i + 1);
      expected[0] += begin / seen;
      expected[1] += 2.0 / seen;
      expected[2] += (static_cast<double>(in.query_begin) - begin - 2.0) / seen;
      expected[3] += static_cast<double>(i + 1 - in.query_begin) / seen;
    }
    for (int seg = 0; seg < 4; ++seg)
      for (int64_t l = 0; l < 2; ++l)
        for (int64_t h = 0; h < 4; ++h)
          EXPECT_NEAR(s.mass[k][l][h][seg].item<double>(), expected[seg] / rows, 1e-6)
              << "depth " << k << " layer " << l << " head " << h << " segment " << needle_segment_names()[seg];
  }
}

TEST(NeedleSweep, MassesAreTheCapturedPatternsSumsAndTheLossIsTheFullLogits) {
  const auto model = loaded(test::random_model(test::small_config(R"([{"type": "rope", "rope_theta": 100.0}])", 2), 7));
  auto spec = small_spec();
  spec.depths = {0.3, 0.8};
  const auto s = compute_needle_sweep(model, spec);
  for (int64_t k = 0; k < 2; ++k) {
    const auto in = needle_input(spec, spec.depths[static_cast<size_t>(k)]);
    const auto tokens = torch::tensor(in.ids, torch::kLong).unsqueeze(0);
    Captures captures;
    CaptureSink sink(CaptureSpec({"blocks.0.attn.hook_pattern", "blocks.1.attn.hook_pattern"}), captures);
    c10::InferenceMode inference;
    const auto logits = model.model->forward(tokens, sink);
    const int64_t T = s.length, a = in.answer_begin;
    const auto log_p = torch::log_softmax(logits[0].to(torch::kDouble), -1);
    double loss = 0;
    for (int64_t i = a - 1; i < T - 1; ++i) loss -= log_p[i][in.ids[static_cast<size_t>(i + 1)]].item<double>();
    EXPECT_NEAR(s.loss[k].item<double>(), loss / (T - a), 1e-5);
    const int64_t spans[4][2] = {{0, 4}, {in.needle_begin, in.needle_begin + 2}, {4, in.query_begin}, {in.query_begin, T}};
    for (int l = 0; l < 2; ++l) {
      const auto p = captures.find({HookKind::Pattern, l, HookStack::Blocks})[0].narrow(1, a - 1, T - a);  // [head, rows, key]
      for (int seg = 0; seg < 4; ++seg) {
        auto expected = p.narrow(2, spans[seg][0], spans[seg][1] - spans[seg][0]).sum(-1).mean(-1);
        if (seg == 2) expected = expected - p.narrow(2, in.needle_begin, 2).sum(-1).mean(-1);
        EXPECT_TRUE(torch::allclose(s.mass[k][l].select(1, seg), expected, 1e-5, 1e-6))
            << "layer " << l << " segment " << seg << "\n" << s.mass[k][l] << "\n" << expected;
      }
      EXPECT_TRUE(torch::allclose(s.mass[k][l].sum(-1), torch::ones({4}), 1e-5, 1e-5)) << "the segments tile the keys";
    }
  }
}

TEST(NeedleSweep, TheFileReadsBackThroughTheRegistry) {
  const auto model = uniform_attention_model();
  const auto s = compute_needle_sweep(model, small_spec());
  AnalysisInput input;
  input.ids = needle_input(small_spec(), 0.0).ids;
  for (const auto id : input.ids) input.labels.push_back("#" + std::to_string(id));
  const auto r = needle_sweep_result(s, input, "random", "test haystack");
  EXPECT_THAT(r.summary, HasSubstr("3 depths at T = 26 (haystack test haystack)"));
  ASSERT_EQ(r.maps.size(), 2u);
  EXPECT_EQ(r.maps[0].rows, 3);  // depth × layer
  EXPECT_EQ(r.maps[0].cols, 2);
  EXPECT_EQ(r.maps[1].cols, 4);  // layer × segment
  EXPECT_EQ(r.curves.y.at(0).size(), 3u);
  const auto dir = test::scratch_dir();
  const auto path = (dir / "needle.h5").string();
  ExportMetadata meta;
  meta.tool_version = POSLENS_VERSION;
  meta.checkpoint = "models/random";
  r.write_hdf5(path, meta);
  const Hdf5Reader file(path);
  const auto* entry = analysis_in_file(file);
  ASSERT_NE(entry, nullptr);
  EXPECT_STREQ(entry->name, "needle-sweep");
  const auto back = entry->read(file);
  EXPECT_EQ(back.csv, r.csv);
  EXPECT_EQ(back.title, "Needle sweep of random");
  const auto read = read_needle_sweep_hdf5(file);
  EXPECT_EQ(read.begin_tokens, 4);
  EXPECT_EQ(read.layer_types, (std::vector<std::string>{"global", "global"}));
  // rows: 3 depths × 2 layers × 4 heads and the header
  EXPECT_EQ(std::count(r.csv.begin(), r.csv.end(), '\n'), 1 + 3 * 2 * 4);
  EXPECT_THAT(r.csv, HasSubstr("depth,needle_begin,loss,layer,layer_type,head,begin,needle,context,end\n"));
}

}  // namespace
}  // namespace poslens
