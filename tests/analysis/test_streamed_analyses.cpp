// Massive activations, frequency usage and pattern divergence (docs/analyses.md): known answers
// for their kernels, and each streamed analysis against the same numbers computed from whole
// captured tensors, with 3-row blocks so block boundaries fall everywhere.
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

#include "analysis/analysis_files.h"
#include "analysis/frequency_usage.h"
#include "analysis/heinsen_states.h"
#include "analysis/length_loss.h"
#include "analysis/position_offset.h"
#include "analysis/massive_activations.h"
#include "analysis/divergence.h"
#include "core/base/error.h"
#include "core/formats/hdf5_reader.h"
#include "core/position/heinsen.h"
#include "core/runtime/capture_sink.h"
#include "fixtures.h"
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

// A model whose layers differ (SmolLM3: RoPE on layers 0-2, none on layer 3): the NoPE layer's
// rows stay NaN (its pairs never turn), the rotating layers have their norms.
TEST(FrequencyUsage, NopeLayersAreLeftEmpty) {
  const auto smollm3 = load_checkpoint(std::string(POSLENS_SOURCE_DIR) + "/tests/data/models/smollm3", {"cpu", "float32", ""});
  const auto u = compute_frequency_usage(smollm3, {3, 4, 5, 6, 7, 8});
  for (int l = 0; l < 3; ++l) EXPECT_TRUE(torch::isfinite(u.q_norm[l]).all().item<bool>()) << "layer " << l;
  EXPECT_TRUE(torch::isnan(u.q_norm[3]).all().item<bool>());
  EXPECT_TRUE(torch::isnan(u.k_norm[3]).all().item<bool>());
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
  // float32 rows (what attention blocks hold), summed in float64: float32 rounding.
  EXPECT_NEAR(js[0].item<double>(), std::log(2.0), 1e-7);  // disjoint: ln 2
  EXPECT_NEAR(js[1].item<double>(), 0.0, 1e-7);            // identical
  // M = (0.5, 0.5): ½[0.25 ln 0.5 + 0.75 ln 1.5] · 2 (the two halves are mirror images)
  EXPECT_NEAR(js[2].item<double>(), 0.25 * std::log(0.5) + 0.75 * std::log(1.5), 1e-7);
  // float64 rows stay float64.
  EXPECT_NEAR(js_divergence_rows(p.to(torch::kDouble), q.to(torch::kDouble))[0].item<double>(), std::log(2.0), 1e-14);
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

// The position-offset intervention (ForwardOptions::position_offset): relative encodings'
// patterns do not move (RoPE up to float rounding of the larger angles), absolute ones' do.
TEST(PositionOffset, RelativeEncodingsKeepTheirPatternsAbsoluteOnesDoNot) {
  const auto ids = some_ids(23);
  const auto js = [&](const char* components) {
    const auto model = loaded(test::small_config(components));
    const auto e = position_offset_effect(model, ids, 17, 1, 2, 8);
    EXPECT_EQ(e.pattern.sizes(), e.shifted.sizes());
    return e.divergence.per_head.max().item<double>();
  };
  // 0 up to float32 rounding (the larger RoPE angles; the two passes' blocks differ in size
  // under POSLENS_ATTENTION_BLOCKS), four orders below the absolute encodings' change.
  EXPECT_LT(js(R"([{"type": "rope"}])"), 1e-7);
  EXPECT_LT(js(R"([{"type": "alibi"}])"), 1e-7);
  EXPECT_LT(js(R"([{"type": "t5", "num_buckets": 8, "max_distance": 12}])"), 1e-7);
  EXPECT_LT(js(R"([{"type": "cope", "npos_max": 5}])"), 1e-7);
  EXPECT_GT(js(R"([{"type": "sinusoidal"}])"), 1e-3);
  EXPECT_GT(js(R"([{"type": "learned_absolute"}])"), 1e-3);
  // A learned table ends at n_ctx = 64: 23 positions shifted by 50 do not fit.
  const auto absolute = loaded(test::small_config(R"([{"type": "learned_absolute"}])"));
  EXPECT_THROW(position_offset_effect(absolute, ids, 50, 0, 0, 8), Error);
  EXPECT_THROW(position_offset_effect(absolute, ids, 1, 2, 0, 8), Error);  // no layer 2
}

TEST(LengthLoss, RopeScalingSpecsAndTheirFrequencies) {
  EXPECT_EQ(rope_scaling_json("none", 128), "");
  EXPECT_EQ(rope_scaling_json("linear:4", 128), R"({"factor":4.0,"rope_type":"linear"})");
  EXPECT_NE(rope_scaling_json("llama3:8", 128).find(R"("original_max_position_embeddings":128)"), std::string::npos);
  EXPECT_THROW(rope_scaling_json("linear", 128), Error);
  EXPECT_THROW(rope_scaling_json("pi:4", 128), Error);
  const auto model = test::random_model(test::small_config(R"([{"type": "rope"}])"));
  const auto linear = with_rope_scaling(model, rope_scaling_json("linear:4", 64));
  const auto theta = model.position_encoding().rotary_info(10)->theta;
  EXPECT_TRUE(torch::allclose(linear->position_encoding().rotary_info(10)->theta, theta / 4));
  const auto back = with_rope_scaling(*linear, "");
  EXPECT_TRUE(torch::allclose(back->position_encoding().rotary_info(10)->theta, theta));
  EXPECT_EQ(linear->weights().tok_embed.data_ptr(), model.weights().tok_embed.data_ptr()) << "weights shared";
  EXPECT_THROW(with_rope_scaling(test::random_model(test::small_config(R"([{"type": "alibi"}])")), "{}"), Error);
}

// Streamed per-position loss against the cross-entropy of the whole logits of each window.
TEST(LengthLoss, PerPositionLossIsTheMeanCrossEntropyOverWindows) {
  const auto model = test::random_model(test::small_config(R"([{"type": "rope"}])"));
  const auto ids = some_ids(40);
  const int64_t T = 9, bos = 1;
  const auto curve = per_position_loss(model, ids, T, 3, bos);
  EXPECT_EQ(curve.windows, 3);
  auto expected = torch::zeros({T - 1}, torch::kDouble);
  c10::InferenceMode inference;
  for (int64_t w = 0; w < 3; ++w) {
    std::vector<int64_t> window = {bos};
    window.insert(window.end(), ids.begin() + w * (T - 1), ids.begin() + (w + 1) * (T - 1));
    const auto tokens = torch::tensor(window, torch::kLong).unsqueeze(0);
    const auto logits = model.forward(tokens).to(torch::kDouble)[0];
    const auto log_p = torch::log_softmax(logits.narrow(0, 0, T - 1), -1);
    expected -= log_p.gather(1, tokens[0].narrow(0, 1, T - 1).unsqueeze(1)).squeeze(1);
  }
  EXPECT_TRUE(torch::allclose(curve.loss, expected / 3, 1e-5, 1e-6));
  EXPECT_THROW(per_position_loss(model, ids, 50, 0, bos), Error);  // fewer tokens than a window
  EXPECT_EQ(per_position_loss(model, ids, 9, 0, -1).windows, 40 / 9);  // no BOS: T tokens each
}

TEST(HeinsenStates, StatesFollowFromTheDecayAndLogits) {
  const auto model = loaded(test::small_config(R"([{"type": "heinsen", "d_pe": 5}])"));
  const auto s = compute_heinsen_states(model, some_ids(14));
  EXPECT_EQ(s.state.sizes(), (std::vector<int64_t>{14, 5}));
  EXPECT_EQ(s.decay.sizes(), s.state.sizes());
  EXPECT_GE(s.decay.min().item<double>(), 0.0);
  EXPECT_LE(s.decay.max().item<double>(), 1.0);
  // s_i = log(p_i · exp(s_{i−1}) + exp(h_i)), s_0 = 0 — the sequential recurrence on what we report.
  const auto again = heinsen_sequential(s.decay.log(), s.logits);
  EXPECT_TRUE(torch::allclose(s.state, again, 1e-5, 1e-5));
  EXPECT_THROW(compute_heinsen_states(loaded(test::small_config(R"([{"type": "rope"}])")), some_ids(4)), Error);
}

// The heinsen-states file and CSV hold what was computed: read back, equal; tokens and labels kept.
TEST(HeinsenStates, FileAndCsvHoldTheStates) {
  const auto model = loaded(test::small_config(R"([{"type": "heinsen", "d_pe": 3}])"));
  const auto ids = some_ids(6);
  const auto s = compute_heinsen_states(model, ids);
  const AnalysisInput input{ids, {"a", "b", "c", "d", "e", "f"}};
  const auto file = (test::scratch_dir() / "h.h5").string();
  write_heinsen_states_hdf5(file, s, input, ExportMetadata{});
  const Hdf5Reader in(file);
  EXPECT_TRUE(in.read("/analysis/heinsen/state").equal(s.state));
  EXPECT_TRUE(in.read("/analysis/heinsen/decay").equal(s.decay));
  EXPECT_TRUE(in.read("/analysis/heinsen/logits").equal(s.logits));
  EXPECT_EQ(in.read_strings("/tokens/text"), input.labels);
  EXPECT_NE(in.string_attribute("/analysis/heinsen", "recurrence").find("Heinsen 2024"), std::string::npos);
  const auto csv = heinsen_states_csv(s, input.labels);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 6 * 3);
  std::istringstream lines(csv);
  std::string header, row;
  std::getline(lines, header);
  std::getline(lines, row);
  EXPECT_EQ(header, "position,token,feature,state,decay,logit");
  EXPECT_EQ(row.substr(0, 8), "0,\"a\",0,") << row;  // tokens quoted
  const double state = s.state[0][0].item<double>();  // written with 9 significant digits
  EXPECT_NEAR(std::stod(row.substr(8)), state, 1e-8 * std::max(1.0, std::abs(state))) << row;
}

}  // namespace
}  // namespace poslens
