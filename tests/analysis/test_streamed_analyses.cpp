// Massive activations, frequency usage and pattern divergence (docs/analyses.md): known answers
// for their kernels, and each streamed analysis against the same numbers computed from whole
// captured tensors, with 3-row blocks so block boundaries fall everywhere.
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <cmath>

#include "analysis/frequency_usage.h"
#include "analysis/massive_activations.h"
#include "analysis/pattern_divergence.h"
#include "core/base/error.h"
#include "core/runtime/capture_sink.h"
#include "random_model.h"

namespace poslens {
namespace {

LoadedModel loaded(const ModelConfig& config, uint64_t seed = 11) {
  LoadedModel m;
  m.path = "random";
  m.model = std::make_unique<Transformer>(test::random_model(config, seed));
  return m;
}

Captures capture(const Transformer& model, const std::vector<int64_t>& ids) {
  Captures whole;
  CaptureSink sink(CaptureSpec::all(), whole);
  c10::InferenceMode inference;
  ForwardOptions small;
  small.blocking = {3, 4};
  model.forward(torch::tensor(ids, torch::kLong).unsqueeze(0), sink, {}, small);
  return whole;
}

std::vector<int64_t> some_ids(int64_t T, int64_t vocab = 30) {
  torch::manual_seed(5);
  const auto t = torch::randint(0, vocab, {T}, torch::kLong);
  return std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + T);
}

TEST(MassiveActivations, LayerExtremesFindTheLargestMagnitudesAndTheMedian) {
  auto h = torch::zeros({4, 3});
  h[2][1] = -500;  // the largest magnitude is negative
  h[0][2] = 40;
  h[3][0] = 7;
  h[1][1] = 1;
  const auto e = layer_extremes(h, 3);
  EXPECT_EQ(e.values[0].item<double>(), -500);
  EXPECT_EQ(e.positions[0].item<int64_t>(), 2);
  EXPECT_EQ(e.dims[0].item<int64_t>(), 1);
  EXPECT_EQ(e.values[1].item<double>(), 40);
  EXPECT_EQ(e.positions[1].item<int64_t>(), 0);
  EXPECT_EQ(e.dims[1].item<int64_t>(), 2);
  EXPECT_EQ(e.values[2].item<double>(), 7);
  EXPECT_EQ(e.median, 0.0);  // 8 of 12 entries are 0
  EXPECT_EQ(layer_extremes(h, 100).values.size(0), 12);  // k clipped to the entries
  EXPECT_THROW(layer_extremes(torch::zeros({0, 3}), 1), Error);
  EXPECT_THROW(layer_extremes(h, 0), Error);
}

TEST(MassiveActivations, StreamedEqualTheCapturedResiduals) {
  const auto config = test::small_config(R"([{"type": "rope"}])");
  const auto model = loaded(config);
  const auto ids = some_ids(21);
  const auto m = compute_massive_activations(model, ids, 5);
  const auto whole = capture(*model.model, ids);
  for (int l = 0; l < 2; ++l) {
    const auto e = layer_extremes(whole.find({HookKind::ResidPost, l})[0], 5);
    // (the capture ran in 3-row blocks: the same numbers up to float32 rounding)
    EXPECT_TRUE(torch::allclose(m.top_values[l], e.values, 1e-5, 1e-6)) << l;
    EXPECT_TRUE(torch::equal(m.top_positions[l], e.positions)) << l;
    EXPECT_TRUE(torch::equal(m.top_dims[l], e.dims)) << l;
    EXPECT_NEAR(m.median[l].item<double>(), e.median, 1e-5 * e.median);
  }
  // A random model has nothing 1000× its median.
  EXPECT_FALSE(m.massive.any().item<bool>());
}

TEST(FrequencyUsage, ChunkNormsPairAsTheModelPairs) {
  RotaryInfo r;
  r.d_head = 4;
  r.rotary_dim = 4;
  // One position of one head: x = (3, 4, 6, 8).
  const auto x = torch::tensor({3.0f, 4.0f, 6.0f, 8.0f}).view({1, 1, 1, 4});
  r.pairing = RopePairing::Interleaved;  // (3, 4), (6, 8)
  auto n = chunk_norms(x, r);
  EXPECT_DOUBLE_EQ(n[0][0].item<double>(), 5.0);
  EXPECT_DOUBLE_EQ(n[0][1].item<double>(), 10.0);
  r.pairing = RopePairing::HalfSplit;  // (3, 6), (4, 8)
  n = chunk_norms(x, r);
  EXPECT_NEAR(n[0][0].item<double>(), std::sqrt(45.0), 1e-6);
  EXPECT_NEAR(n[0][1].item<double>(), std::sqrt(80.0), 1e-6);
  r.attention_factor = 2.0;  // YaRN's scaled cos and sin
  EXPECT_NEAR(chunk_norms(x, r)[0][0].item<double>(), std::sqrt(45.0) / 2, 1e-6);
  r.rotary_dim = 2;  // partial rotary: only (3, 4)
  r.attention_factor = 1.0;
  EXPECT_DOUBLE_EQ(chunk_norms(x, r)[0][0].item<double>(), 5.0);
  EXPECT_THROW(chunk_norms(x.view({1, 4}), r), Error);
}

// The norms of the rotated q/k the forward hands over equal those of hook_q / hook_k before
// rotation: rotation keeps each chunk's norm, and the pairing is the model's.
TEST(FrequencyUsage, RotatedInputsGiveTheNormsBeforeRotation) {
  for (const char* pairing : {"interleaved", "half_split"}) {
    const auto config = test::small_config(std::string(R"([{"type": "rope", "pairing": ")") + pairing + R"("}])", 2);
    const auto model = loaded(config);
    const auto ids = some_ids(17);
    const auto u = compute_frequency_usage(model, ids);
    const auto whole = capture(*model.model, ids);
    const auto rotary = *model.model->position_encoding().rotary_info(17);
    for (int l = 0; l < 2; ++l) {
      // hook_q is [batch, pos, head, d_head]; chunk_norms takes [batch, head, pos, d_head].
      const auto q = chunk_norms(whole.find({HookKind::Q, l}).transpose(1, 2), rotary);
      const auto k = chunk_norms(whole.find({HookKind::K, l}).transpose(1, 2), rotary);
      EXPECT_TRUE(torch::allclose(u.q_norm[l], q, 1e-5, 1e-6)) << pairing << " layer " << l;
      EXPECT_TRUE(torch::allclose(u.k_norm[l], k, 1e-5, 1e-6)) << pairing << " layer " << l;
    }
    EXPECT_EQ(u.k_norm.size(1), 2);  // kv heads
    EXPECT_EQ(u.q_layer_mean().sizes(), (std::vector<int64_t>{2, 2}));
  }
}

TEST(FrequencyUsage, RefusesAModelWithoutRotaryComponents) {
  const auto model = loaded(test::small_config(R"([{"type": "alibi"}])"));
  try {
    compute_frequency_usage(model, some_ids(5));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs rotary components"), std::string::npos) << e.what();
  }
}

TEST(PatternDivergence, JsOfRowsKnownAnswers) {
  const auto p = torch::tensor({{1.0, 0.0}, {0.5, 0.5}, {0.25, 0.75}});
  const auto q = torch::tensor({{0.0, 1.0}, {0.5, 0.5}, {0.75, 0.25}});
  const auto js = js_divergence_rows(p, q);
  EXPECT_NEAR(js[0].item<double>(), std::log(2.0), 1e-12);  // disjoint: ln 2
  EXPECT_NEAR(js[1].item<double>(), 0.0, 1e-12);            // identical
  // M = (0.5, 0.5): ½[0.25 ln 0.5 + 0.75 ln 1.5] · 2 (the two halves are mirror images)
  EXPECT_NEAR(js[2].item<double>(), 0.25 * std::log(0.5) + 0.75 * std::log(1.5), 1e-12);
  EXPECT_THROW(js_divergence_rows(p, q.narrow(0, 0, 2)), Error);
}

// Two differently initialised models (RoPE, and ALiBi with a sliding window: their key ranges
// differ) against the JS of their whole captured patterns.
TEST(PatternDivergence, StreamedEqualsTheWholePatterns) {
  const auto a_config = test::small_config(R"([{"type": "rope"}])");
  auto b_config = test::small_config(R"([{"type": "alibi"}])");
  b_config.sliding_window = 6;
  const auto a = loaded(a_config, 3), b = loaded(b_config, 4);
  const auto ids = some_ids(19);
  const auto d = compute_pattern_divergence(a, b, ids);
  const auto wa = capture(*a.model, ids), wb = capture(*b.model, ids);
  for (int l = 0; l < 2; ++l) {
    const auto js = js_divergence_rows(wa.find({HookKind::Pattern, l})[0], wb.find({HookKind::Pattern, l})[0]);
    EXPECT_TRUE(torch::allclose(d.per_head[l], js.mean(1), 1e-5, 1e-7)) << l;
    EXPECT_TRUE(torch::allclose(d.per_query[l], js.mean(0), 1e-5, 1e-7)) << l;
  }
  EXPECT_GT(d.per_head.min().item<double>(), 0.0);
  // A model against itself: 0 everywhere.
  const auto same = compute_pattern_divergence(a, a, ids);
  EXPECT_LT(same.per_head.abs().max().item<double>(), 1e-6);
}

TEST(PatternDivergence, RefusesModelsOfOtherShapes) {
  const auto a = loaded(test::small_config(R"([{"type": "rope"}])"));
  auto other = test::small_config(R"([{"type": "rope"}])");
  other.n_layers = 1;
  const auto b = loaded(other);
  EXPECT_THROW(compute_pattern_divergence(a, b, some_ids(5)), Error);
}

}  // namespace
}  // namespace poslens
