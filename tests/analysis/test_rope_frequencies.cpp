// RoPE frequency analysis (analysis/rope_frequencies.h, probe.h, compare.h) on
// inputs with known answers: the decomposition reproduces the model's own scores for every
// pairing and rotary variant, a head with one live frequency puts all VAF on it, the probe
// equals the mean of the forward's own last-row logits, and VAF's edge cases.
#include <torch/torch.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "analysis/compare.h"
#include "analysis/rope_frequencies.h"
#include "analysis/probe.h"
#include "core/models/poslens_model.h"
#include "core/runtime/checkpoint.h"
#include "core/runtime/transformer.h"
#include "fixtures.h"

namespace poslens {
namespace {

using ::testing::HasSubstr;

struct Variant {
  const char* name;
  const char* position_encoding;  ///< JSON list
  const char* block = "";         ///< extra config keys
};

const Variant kVariants[] = {
    {"interleaved", R"([{"type": "rope", "pairing": "interleaved", "rope_theta": 100}])"},
    {"half_split", R"([{"type": "rope", "pairing": "half_split", "rope_theta": 100}])"},
    {"partial_rotary", R"([{"type": "rope", "rotary_dim": 4, "pairing": "half_split"}])"},
    {"hope", R"([{"type": "hope", "rope_theta": 100, "L": 8}])"},
    {"linear_scaled", R"([{"type": "rope", "rope_scaling": {"rope_type": "linear", "factor": 4}}])"},
    {"yarn", R"([{"type": "rope", "rotary_dim": 6, "rope_scaling": {"rope_type": "yarn", "factor": 2}}])"},
    {"gqa", R"([{"type": "rope", "pairing": "interleaved"}])", R"("n_kv_heads": 1, )"},
    {"cope_rope", R"([{"type": "rope"}, {"type": "cope", "npos_max": 6}])"},
};
void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }

constexpr int64_t kVocab = 20;

ModelConfig config_of(const Variant& v) {
  return poslens_config_from_text(
      std::string(R"({"model_type": "poslens", "d_model": 16, "n_layers": 2, "n_heads": 2, )"
                  R"("d_mlp": 32, "vocab_size": 20, "n_ctx": 8, "bos_token_id": 0, )") +
          v.block + R"("position_encoding": )" + v.position_encoding + "}",
      v.name);
}

LoadedModel loaded_model(const ModelConfig& config, ModelWeights weights) {
  LoadedModel m;
  m.path = "in-memory";
  m.model = std::make_unique<Transformer>(config, std::move(weights));
  return m;
}

/// |a − b| <= tol · max|b| over `mask`.
void expect_close(const at::Tensor& a, const at::Tensor& b, const at::Tensor& mask, double tol) {
  const auto diff = (a - b).abs().masked_select(mask).max().item<double>();
  const auto ref = b.abs().masked_select(mask).max().item<double>();
  EXPECT_LE(diff, tol * ref) << "max |difference| " << diff << " against max |value| " << ref;
}

/// hook_attn_scores of every layer for the probe's own inputs ([BOS]=0 + token × (T−1)).
Captures probe_inputs_forward(const LoadedModel& model, const std::vector<int64_t>& tokens,
                              int64_t T) {
  c10::InferenceMode guard;
  auto ids = torch::tensor(tokens, torch::kLong).view({-1, 1}).repeat({1, T});
  ids.select(1, 0).fill_(0);
  Captures caps;
  model.model->forward(ids, CaptureSpec({"blocks.*.attn.hook_attn_scores"}), &caps);
  return caps;
}

class EveryRotaryVariant : public ::testing::TestWithParam<Variant> {};

TEST_P(EveryRotaryVariant, ComponentsPlusRemainderReproduceTheScores) {
  c10::InferenceMode guard;
  const auto config = config_of(GetParam());
  const Transformer model(config, initialize_weights(config, 3));
  torch::manual_seed(5);
  const int64_t T = 12;  // beyond n_ctx: scaled RoPE's extrapolation range too
  const auto tokens = torch::randint(0, kVocab, {2, T}, torch::kLong);
  Captures caps;
  model.forward(tokens, CaptureSpec::all(), &caps);
  const auto info = model.position_encoding().rotary_info(T);
  ASSERT_TRUE(info.has_value());
  const auto positions = torch::arange(T, torch::kLong);
  const auto allowed = allowed_keys(config, T, torch::kCPU);
  for (int l = 0; l < config.n_layers; ++l) {
    const auto parts = decompose_rotary_scores(caps.find({HookKind::Q, l}), caps.find({HookKind::K, l}),
                                               positions, positions, *info, config.attention_scale());
    ASSERT_EQ(parts.components.sizes(),
              (std::vector<int64_t>{2, config.n_heads, info->rotary_dim / 2, T, T}));
    auto sum = parts.components.sum(2);
    EXPECT_EQ(parts.remainder.defined(), info->rotary_dim < config.d_head);
    if (parts.remainder.defined()) sum = sum + parts.remainder;
    if (const auto pos = caps.find({HookKind::PosScores, l}); pos.defined()) sum = sum + pos;
    const auto scores = caps.find({HookKind::AttnScores, l});
    expect_close(sum, scores, allowed.expand_as(scores), 1e-4);
  }
}

INSTANTIATE_TEST_SUITE_P(RopeFrequencies, EveryRotaryVariant, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(RopeFrequencies, PairDimsFollowThePairingConvention) {
  const auto [a, b] = rotary_pair_dims(RopePairing::Interleaved, 6);
  EXPECT_TRUE(a.equal(torch::tensor({0, 2, 4}, torch::kLong)));
  EXPECT_TRUE(b.equal(torch::tensor({1, 3, 5}, torch::kLong)));
  const auto [c, d] = rotary_pair_dims(RopePairing::HalfSplit, 6);
  EXPECT_TRUE(c.equal(torch::tensor({0, 1, 2}, torch::kLong)));
  EXPECT_TRUE(d.equal(torch::tensor({3, 4, 5}, torch::kLong)));
  EXPECT_THAT(test::error_of([] { rotary_pair_dims(RopePairing::HalfSplit, 5); }),
              HasSubstr("rotary_dim must be even"));
}

TEST(RopeFrequencies, VafOfACurveAgainstItselfIs100AndAgainstAConstantIs0) {
  const auto y = torch::tensor({1.0, 4.0, 2.0, 8.0, 5.0}, torch::kDouble);
  EXPECT_NEAR(variance_accounted_for(y, y).item<double>(), 100.0, 1e-12);
  EXPECT_NEAR(variance_accounted_for(y, torch::full_like(y, 3.0)).item<double>(), 0.0, 1e-12);
  // A shifted copy accounts for all of the variance; half of the curve for 75% of it.
  EXPECT_NEAR(variance_accounted_for(y, y + 7.0).item<double>(), 100.0, 1e-12);
  EXPECT_NEAR(variance_accounted_for(y, y * 0.5).item<double>(), 75.0, 1e-12);
  // Broadcast: one curve against three components at once.
  const auto many = torch::stack({y, torch::zeros_like(y), y * 0.5});
  const auto v = variance_accounted_for(y.unsqueeze(0), many);
  EXPECT_NEAR(v[0].item<double>(), 100.0, 1e-12);
  EXPECT_NEAR(v[1].item<double>(), 0.0, 1e-12);
  EXPECT_TRUE(std::isnan(variance_accounted_for(torch::ones({4}), torch::ones({4})).item<double>()));
  EXPECT_THAT(test::error_of([&] { variance_accounted_for(y, torch::ones({3})); }),
              HasSubstr("last dimension"));
}

TEST(RopeFrequencies, ActivatedBandIsPiOverLToTwoPiOverL) {
  // theta_c = 10000^(-2c/64): pi/512 < theta_c < 2 pi/512 for c = 16, 17 (15.3 < c < 17.7).
  const auto theta = torch::pow(10000.0, -2.0 * torch::arange(32, torch::kDouble) / 64.0);
  const auto active = activated_components(theta, 512);
  EXPECT_TRUE(active.nonzero().flatten().equal(torch::tensor({16, 17}, torch::kLong)));
  EXPECT_TRUE(std::isinf(wavelengths(torch::zeros({1}, torch::kDouble))[0].item<double>()));
  EXPECT_NEAR(wavelengths(theta)[0].item<double>(), 2 * M_PI, 1e-12);
}

TEST(RopeFrequencies, HopeComponentsPastTheCutDoNotTurn) {
  RotaryInfo info;
  info.theta = torch::tensor({1.0, 0.5, 0.25}, torch::kDouble);
  info.kept_components = 2;
  EXPECT_TRUE(effective_theta(info).equal(torch::tensor({1.0, 0.5, 0.0}, torch::kDouble)));
}

/// Keeps only rotary pair `c` of every head's q and k projections (rows of w_q / w_k).
void keep_one_component(const ModelConfig& config, ModelWeights& weights, int64_t c,
                        RopePairing pairing) {
  const auto [a, b] = rotary_pair_dims(pairing, config.d_head);
  auto mask = torch::zeros({config.d_head});
  mask[a[c].item<int64_t>()] = 1;
  mask[b[c].item<int64_t>()] = 1;
  for (auto& layer : weights.layers) {
    layer.w_q.mul_(mask.repeat({config.n_heads}).unsqueeze(1));
    layer.w_k.mul_(mask.repeat({config.n_kv_heads}).unsqueeze(1));
  }
}

TEST(RopeProbe, AHeadWithOneLiveFrequencyPutsAllVafOnIt) {
  for (const char* pairing : {"interleaved", "half_split"}) {
    SCOPED_TRACE(pairing);
    const Variant v{"one", pairing[0] == 'i'
                               ? R"([{"type": "rope", "pairing": "interleaved", "rope_theta": 100}])"
                               : R"([{"type": "rope", "pairing": "half_split", "rope_theta": 100}])"};
    const auto config = config_of(v);
    auto weights = initialize_weights(config, 4);
    keep_one_component(config, weights, 1,
                       pairing[0] == 'i' ? RopePairing::Interleaved : RopePairing::HalfSplit);
    const auto model = loaded_model(config, std::move(weights));
    ProbeOptions options;
    options.length = 16;
    options.bos_id = 0;
    const auto r = run_probe(model, options);
    ASSERT_EQ(r.vaf.sizes(), (std::vector<int64_t>{2, 4}));
    for (int l = 0; l < 2; ++l) {
      EXPECT_NEAR(r.vaf[l][1].item<double>(), 100.0, 1e-3);
      for (int c : {0, 2, 3}) EXPECT_NEAR(r.vaf[l][c].item<double>(), 0.0, 1e-3);
      for (int h = 0; h < 2; ++h) EXPECT_NEAR(r.vaf_per_head[l][h][1].item<double>(), 100.0, 1e-3);
    }
  }
}

TEST(RopeProbe, ScoresAreTheMeanOfTheForwardsLastRow) {
  // Partial rotary plus CoPE: components, remainder and position terms all present.
  const Variant v{"mixed", R"([{"type": "rope", "rotary_dim": 4}, {"type": "cope", "npos_max": 6}])"};
  const auto config = config_of(v);
  const auto model = loaded_model(config, initialize_weights(config, 8));
  ProbeOptions options;
  options.length = 10;
  options.bos_id = 0;
  options.batch = 3;  // several batches, the last one short
  const auto r = run_probe(model, options);
  EXPECT_EQ(r.n_samples, kVocab - 1);  // every token but BOS
  EXPECT_EQ(r.pairing, "half_split");
  ASSERT_TRUE(r.remainder.defined());
  ASSERT_TRUE(r.position_terms.defined());

  const auto caps = probe_inputs_forward(model, r.tokens, 10);
  for (int l = 0; l < 2; ++l) {
    const auto last = caps.find({HookKind::AttnScores, l}).select(2, 9);  // [N, head, key]
    const auto all = torch::ones({2, 10}, torch::kBool);
    expect_close(r.scores[l], last.mean(0), all, 1e-5);
    expect_close(r.scores_std[l], last.std(0, /*unbiased=*/false), all, 1e-4);
    expect_close(r.components[l].sum(1) + r.remainder[l] + r.position_terms[l], r.scores[l],
                 all, 1e-5);
  }

  // Without per-component sums (what position-only maps ask for): one summed component, the
  // same scores, no VAF.
  options.per_component = false;
  const auto summed = run_probe(model, options);
  ASSERT_EQ(summed.components.size(2), 1);
  const auto all = torch::ones({2, 2, 10}, torch::kBool);
  expect_close(summed.components.select(2, 0), r.components.sum(2), all, 1e-5);
  expect_close(summed.scores, r.scores, all, 1e-6);
  EXPECT_FALSE(summed.vaf.defined());
}

TEST(RopeProbe, TokensLeaveOutSpecialsAndFollowTheSeed) {
  const auto config = config_of(kVariants[0]);
  const auto model = loaded_model(config, initialize_weights(config, 1));
  const auto all = probe_tokens(model, 0, 0);
  EXPECT_EQ(all.size(), static_cast<size_t>(kVocab - 1));
  EXPECT_EQ(std::count(all.begin(), all.end(), 0), 0);  // BOS left out
  const auto a = probe_tokens(model, 5, 42), b = probe_tokens(model, 5, 42), c = probe_tokens(model, 5, 43);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(std::set<int64_t>(a.begin(), a.end()).size(), 5u);  // without replacement
  EXPECT_EQ(probe_tokens(model, 50, 1).size(), 50u);              // then with replacement
  ProbeOptions options;
  options.length = 1;
  EXPECT_THAT(test::error_of([&] { run_probe(model, options); }), HasSubstr("at least 2"));
}

TEST(RopeProbe, NonRotaryModelsGetTheirOwnLogitsWithoutComponents) {
  // ALiBi (a static bias) and Transformer-XL (whose u·k content term is in the logits too).
  for (const char* pe : {R"([{"type": "alibi"}])", R"([{"type": "transformer_xl"}])"}) {
    SCOPED_TRACE(pe);
    const auto config = config_of({"other", pe});
    const auto model = loaded_model(config, initialize_weights(config, 2));
    ProbeOptions options;
    options.length = 8;
    options.samples = 4;
    const auto r = run_probe(model, options);  // BOS from the config
    EXPECT_EQ(r.components.size(2), 0);
    EXPECT_EQ(r.vaf.size(1), 0);
    EXPECT_TRUE(r.position_terms.defined());
    EXPECT_TRUE(r.pairing.empty());

    const auto caps = probe_inputs_forward(model, r.tokens, 8);
    for (int l = 0; l < 2; ++l)
      expect_close(r.scores[l], caps.find({HookKind::AttnScores, l}).select(2, 7).mean(0),
                   torch::ones({2, 8}, torch::kBool), 1e-5);
  }
}

// Models whose layers differ (tests/data/models: Gemma 3's local base 100 beside the global base
// 10000 with linear ×2; SmolLM3's NoPE layer 3): each layer is split by its own rotation and keeps
// its own θ_c; a NoPE layer has no components and its logits as they are.
TEST(RopeProbe, EachLayerIsSplitByItsOwnRotation) {
  for (const char* name : {"gemma3", "smollm3"}) {
    SCOPED_TRACE(name);
    const auto model = load_checkpoint(
        (std::filesystem::path(POSLENS_SOURCE_DIR) / "tests/data/models" / name).string(), {"cpu", "float32", ""});
    const auto& c = model.model->config();
    ProbeOptions options;
    options.length = 10;
    options.samples = 5;
    options.bos_id = 0;
    const auto r = run_probe(model, options);
    ASSERT_TRUE(r.theta_per_layer.defined());
    const auto caps = probe_inputs_forward(model, r.tokens, 10);
    for (int l = 0; l < c.n_layers; ++l) {
      SCOPED_TRACE(l);
      const auto visible =
          allowed_keys(model.model->layer_config(l), 10, torch::kCPU).select(0, 9).expand({c.n_heads, 10});
      expect_close(r.scores[l], caps.find({HookKind::AttnScores, l}).select(2, 9).mean(0), visible, 1e-5);
      const bool rotates = model.model->position_encoding(l).rotates();
      if (rotates) expect_close(r.components[l].sum(1), r.scores[l], visible, 1e-5);
      EXPECT_EQ(r.components[l].abs().max().item<float>() > 0, rotates);
      EXPECT_EQ(r.theta_per_layer[l].abs().max().item<double>() > 0, rotates);
    }
    if (std::string(name) == "gemma3") {  // θ_1 = base^(−2/12), the global one divided by 2
      EXPECT_NEAR(layer_theta(r, 0).first[1].item<double>(), std::pow(100.0, -2.0 / 12), 1e-12);
      EXPECT_NEAR(layer_theta(r, 5).first[1].item<double>(), std::pow(10000.0, -2.0 / 12) / 2, 1e-12);
    }
  }
}

TEST(ProbeCompare, SeriesFoldersInStepOrderWithTheirSteps) {
  const auto dir = test::scratch_dir();
  const auto config = config_of(kVariants[0]);
  for (int step : {100, 20, 0}) {
    char name[32];
    std::snprintf(name, sizeof name, "step-%06d", step);
    write_poslens_model((dir / name).string(), config, initialize_weights(config, step + 1));
  }
  std::filesystem::create_directories(dir / "notes");
  const auto paths = series_checkpoints(dir.string());
  ASSERT_EQ(paths.size(), 3u);
  EXPECT_THAT(paths[0], HasSubstr("step-000000"));
  EXPECT_THAT(paths[2], HasSubstr("step-000100"));

  LoadOptions load;
  load.device = "cpu";
  ProbeOptions options;
  options.length = 8;
  options.samples = 6;
  const auto r = compare_checkpoints(paths, load, options);
  EXPECT_EQ(r.steps, (std::vector<int64_t>{0, 20, 100}));
  EXPECT_EQ(r.vaf.sizes(), (std::vector<int64_t>{3, 2, 4}));
  EXPECT_EQ(r.probes[0].tokens, r.probes[2].tokens);
  EXPECT_FALSE(r.probes[0].scores.equal(r.probes[1].scores));  // different weights

  EXPECT_THAT(test::error_of([&] { series_checkpoints((dir / "notes").string()); }),
              HasSubstr("no checkpoint folders"));
  EXPECT_THAT(test::error_of([&] { compare_checkpoints({paths[0]}, load, options); }),
              HasSubstr("at least two"));
  const auto other = config_of(kVariants[2]);  // partial rotary: fewer components
  write_poslens_model((dir / "other").string(), other, initialize_weights(other, 1));
  EXPECT_THAT(test::error_of([&] {
                compare_checkpoints({paths[0], (dir / "other").string()}, load, options);
              }),
              HasSubstr("cannot be compared"));
}

}  // namespace
}  // namespace poslens
