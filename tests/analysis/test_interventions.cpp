// Interventions (analysis/interventions.h), by their known answers: p-RoPE with p = 0 changes
// nothing and with p = 1 is the NoPE forward of the same weights; p = 0.5 stops exactly the
// lowest half of θ_c; a head's temperature divides that head's logits and no other's; removing
// gpt-oss's learned sinks makes every row of its patterns sum to 1; masking the first token as
// a key gives every later row the softmax of its scores without key 0, on every attention path;
// zeroing massive activations where they first appear equals the forward with them never made,
// setting them to calibration means the forward with those values;
// the intervened model names what it runs with, and its files record it; what does not apply
// is refused with the reason; the CLI's spellings parse.
#include <torch/torch.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "analysis/analysis_files.h"
#include "analysis/interventions.h"
#include "analysis/massive_activations.h"
#include "core/base/error.h"
#include "core/runtime/capture_sink.h"
#include "core/formats/hdf5_reader.h"
#include "core/runtime/checkpoint.h"
#include "core/runtime/massive_entries.h"
#include "core/runtime/run.h"
#include "fixtures.h"
#include "random_model.h"

namespace poslens {
namespace {

using ::testing::HasSubstr;

const auto kRope = R"([{"type": "rope", "rope_theta": 100.0}])";

at::Tensor tokens(int64_t T) {
  std::vector<int64_t> ids;
  for (int64_t t = 0; t < T; ++t) ids.push_back((5 * t + 2) % 30);
  return torch::tensor(ids, torch::kLong).unsqueeze(0);
}

at::Tensor logits_of(const Transformer& model, int64_t T = 12) {
  c10::InferenceMode inference;
  return model.forward(tokens(T));
}

/// Layer `layer`'s hook_attn_scores, [head, q, k].
at::Tensor scores_of(const Transformer& model, int layer) {
  Captures captures;
  CaptureSink sink(CaptureSpec({"blocks." + std::to_string(layer) + ".attn.hook_attn_scores"}), captures);
  c10::InferenceMode inference;
  model.forward(tokens(10), sink);
  return captures.find({HookKind::AttnScores, layer, HookStack::Blocks})[0];
}

Interventions p_rope(double p) {
  Interventions iv;
  iv.p_rope = p;
  return iv;
}

TEST(Interventions, PRopeZeroChangesNothingAndOneIsTheNopeForward) {
  const auto config = test::small_config(kRope, 2);
  const auto model = test::random_model(config, 4);
  EXPECT_TRUE(torch::equal(logits_of(*intervened_model(model, p_rope(0.0))), logits_of(model)));
  auto nope_config = config;
  nope_config.pe_components.clear();
  const Transformer nope(nope_config, model.weights());
  const auto all = intervened_model(model, p_rope(1.0));
  EXPECT_TRUE(torch::allclose(logits_of(*all), logits_of(nope), 1e-5, 1e-5));
  EXPECT_FALSE(torch::allclose(logits_of(model), logits_of(nope), 1e-3, 1e-3)) << "RoPE mattered to begin with";
  EXPECT_THAT(all->position_encoding().describe(), HasSubstr("p-RoPE: lowest 2 of 2 components unrotated"));
}

TEST(Interventions, PRopeHalfStopsTheLowestHalfOfTheFrequencies) {
  // d_head 8: four components
  const auto wide = poslens_config_from_text(
      R"({"model_type": "poslens", "d_model": 32, "n_layers": 1, "n_heads": 4, "d_mlp": 24, "vocab_size": 30,
          "n_ctx": 64, "position_encoding": [{"type": "rope", "rope_theta": 100.0}]})",
      "wide");
  const auto model = test::random_model(wide, 4);
  const auto before = model.position_encoding().rotary_info()->theta;
  const auto after = intervened_model(model, p_rope(0.5))->position_encoding().rotary_info()->theta;
  ASSERT_EQ(after.size(0), 4);
  EXPECT_TRUE(torch::equal(after.narrow(0, 0, 2), before.narrow(0, 0, 2)));
  EXPECT_TRUE(torch::equal(after.narrow(0, 2, 2), torch::zeros({2}, torch::kDouble)));
  EXPECT_EQ(p_rope_dropped_components(0.3, 8), 1);  // ⌊0.3 · 4 + 0.5⌋
  EXPECT_THROW(p_rope_dropped_components(1.5, 8), Error);
  const auto alibi = test::random_model(test::small_config(R"([{"type": "alibi"}])"), 4);
  try {
    intervened_model(alibi, p_rope(0.5));
    ADD_FAILURE() << "p-RoPE on ALiBi";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("p-RoPE stops RoPE's lowest frequencies, and this model's position encoding is"));
  }
}

TEST(Interventions, ATemperatureDividesThatHeadsLogitsAndNoOther) {
  const auto model = test::random_model(test::small_config(kRope, 2), 6);
  Interventions iv;
  iv.temperatures = {{1, 2, 2.0}};
  const auto hot = intervened_model(model, iv);
  const auto before = scores_of(model, 1), after = scores_of(*hot, 1);
  const auto seen = torch::isfinite(before[2]);
  EXPECT_TRUE(torch::equal(seen, torch::isfinite(after[2])));
  EXPECT_TRUE(torch::allclose(after[2].masked_select(seen), before[2].masked_select(seen) / 2.0, 1e-5, 1e-6));
  for (int h : {0, 1, 3}) EXPECT_TRUE(torch::equal(after[h], before[h])) << "head " << h;
  EXPECT_TRUE(torch::equal(scores_of(*hot, 0), scores_of(model, 0))) << "layer 0 untouched";
  EXPECT_TRUE(torch::equal(model.weights().layers[1].w_q, test::random_model(test::small_config(kRope, 2), 6).weights().layers[1].w_q))
      << "the loaded model's weights are not changed";
  iv.temperatures = {{0, -1, 0.5}};  // every head of layer 0
  const auto all = scores_of(*intervened_model(model, iv), 0), base = scores_of(model, 0);
  const auto finite = torch::isfinite(base);
  EXPECT_TRUE(torch::allclose(all.masked_select(finite), base.masked_select(finite) * 2.0, 1e-5, 1e-5));
}

TEST(Interventions, WhatDoesNotApplyIsRefusedWithTheReason) {
  const auto alibi = test::random_model(test::small_config(R"([{"type": "alibi"}])"), 4);
  Interventions iv;
  iv.temperatures = {{0, 1, 2.0}};
  try {
    intervened_model(alibi, iv);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("adds a term to the logits"));
  }
  const auto rope = test::random_model(test::small_config(kRope), 4);
  iv.temperatures = {{2, 0, 2.0}};
  EXPECT_THROW(intervened_model(rope, iv), Error);  // 2 layers
  iv.temperatures = {{0, 4, 2.0}};
  EXPECT_THROW(intervened_model(rope, iv), Error);  // 4 heads
  Interventions sinks;
  sinks.remove_sinks = true;
  EXPECT_THROW(intervened_model(rope, sinks), Error);
}

TEST(Interventions, WithoutGptOssSinksEveryRowSumsToOne) {
  const std::string dir = std::string(POSLENS_SOURCE_DIR) + "/tests/data/models/gpt_oss";
  const auto loaded = load_checkpoint(dir, {"cpu", "float32", ""});
  Interventions iv;
  iv.remove_sinks = true;
  const auto plain = intervened_model(*loaded.model, iv);
  EXPECT_FALSE(plain->config().attention_sinks);
  for (const auto* model : {loaded.model.get(), plain.get()}) {
    Captures captures;
    CaptureSink sink(CaptureSpec({"blocks.0.attn.hook_pattern"}), captures);
    c10::InferenceMode inference;
    model->forward(tokens(9), sink);
    const auto sums = captures.find({HookKind::Pattern, 0, HookStack::Blocks}).sum(-1);
    if (model == plain.get())
      EXPECT_TRUE(torch::allclose(sums, torch::ones_like(sums), 1e-5, 1e-5));
    else
      EXPECT_LT(sums.min().item<double>(), 0.99) << "the sinks took mass before";
  }
}

/// Layer `layer`'s `kind` map over `T` tokens, [head, q, k].
at::Tensor map_of(const Transformer& model, HookKind kind, int layer, int64_t T) {
  Captures captures;
  const HookPoint point{kind, layer, HookStack::Blocks};
  CaptureSink sink(CaptureSpec({point.name()}), captures);
  c10::InferenceMode inference;
  model.forward(tokens(T), sink);
  return captures.find(point)[0];
}

TEST(Interventions, MaskingTheFirstKeyGivesEveryLaterRowTheSoftmaxWithoutIt) {
  // Two kv heads shared by four query heads, RoPE; 40 positions so that the blocked paths
  // (POSLENS_ATTENTION_BLOCKS=3,5 in ctest's second run) cross many blocks and key chunks.
  const auto model = test::random_model(test::small_config(kRope, 2), 8);
  Interventions iv;
  iv.mask_first_key = true;
  const auto masked = intervened_model(model, iv);
  const int64_t T = 40;
  for (int layer : {0, 1}) {
    // Layer 0's scores are the plain model's (its input is the same); later layers read a
    // residual stream that changed, so compare each with the masked model's own scores.
    const auto scores = map_of(*masked, HookKind::AttnScores, layer, T);
    const auto pattern = map_of(*masked, HookKind::Pattern, layer, T);
    if (layer == 0) {
      const auto plain = map_of(model, HookKind::AttnScores, 0, T);
      const auto seen = torch::isfinite(scores);
      EXPECT_TRUE(torch::allclose(scores.masked_select(seen), plain.masked_select(seen), 1e-6, 1e-6));
      EXPECT_TRUE(torch::isneginf(scores.narrow(1, 1, T - 1).select(2, 0)).all().item<bool>())
          << "key 0 is hidden from queries 1…T−1";
    }
    auto expected_scores = scores.clone();
    expected_scores.narrow(1, 1, T - 1).select(2, 0).fill_(-std::numeric_limits<double>::infinity());
    EXPECT_TRUE(torch::allclose(pattern, torch::softmax(expected_scores, -1), 1e-6, 1e-7)) << "layer " << layer;
    EXPECT_TRUE(torch::equal(pattern.select(1, 0).select(1, 0), torch::ones({4}))) << "query 0 keeps its one key";
  }
  // The output without maps (fused with a mask on LibTorch 2.x, streamed key chunks under small
  // blocks) equals the output of the pass that made the maps above.
  Captures captures;
  CaptureSink keep(CaptureSpec({"blocks.*.attn.hook_pattern"}), captures);
  c10::InferenceMode inference;
  const auto with_maps = masked->forward(tokens(T), keep);
  EXPECT_TRUE(torch::allclose(masked->forward(tokens(T)), with_maps, 1e-5, 1e-5));
  EXPECT_FALSE(torch::allclose(model.forward(tokens(T)), with_maps, 1e-3, 1e-3)) << "the first key mattered";
  // RoPE is relative: with key 0 unseen, positions 1…T−1 compute what the input without its
  // first token does (the model's own forward on the shortened ids, an independent route).
  const auto shortened = model.forward(tokens(T).narrow(1, 1, T - 1));
  EXPECT_TRUE(torch::allclose(with_maps.narrow(1, 1, T - 1), shortened, 1e-4, 1e-4));
}

TEST(Interventions, TheMassiveCriterionIsSunEtAlsThreshold) {
  auto x = torch::ones({1, 4, 8});  // median |x| 1
  x[0][2][5] = 1500.0;              // > 100 and > 1000 · 1
  x[0][1][3] = -2000.0;
  x[0][3][0] = 900.0;  // > 100 but < 1000 · median
  const auto massive = massive_entries(x);
  EXPECT_EQ(massive.sum().item<int64_t>(), 2);
  EXPECT_TRUE(massive[0][2][5].item<bool>() && massive[0][1][3].item<bool>());
}

/// Layer 0 writes nothing (W_o = W_down = 0), so its output is the embedding; token 7's
/// embedding holds `value` in dimension 3 (a massive entry when large: 5000 against a median
/// |h| ≈ 0.34); layer 1 is real.
Transformer planted_massive(double value) {
  const auto config = test::small_config(kRope, 2);
  auto weights = test::random_model(config, 5).weights();
  torch::NoGradGuard no_grad;
  auto& first = weights.layers[0];
  for (auto* t : {&first.w_o, &first.b_o, &first.w_down, &first.b_down})
    if (t->defined()) *t = torch::zeros_like(*t);
  weights.tok_embed = weights.tok_embed.clone();
  weights.tok_embed[7][3] = value;
  return Transformer(config, weights);
}

TEST(Interventions, ZeroingMassiveActivationsEqualsTheForwardThatNeverMadeThem) {
  // The planted massive entry zeroed where it first appears: the forward of a table whose entry is 0.
  const auto planted = planted_massive(5000.0), without = planted_massive(0.0);
  const auto config = planted.config();
  const auto ablated = intervened_model(planted, parse_interventions({"massive=zero"}));
  EXPECT_TRUE(ablated->config().ablate_massive_activations);
  const auto ids = torch::tensor(std::vector<int64_t>{1, 7, 4, 7, 9, 2}, torch::kLong).unsqueeze(0);
  c10::InferenceMode inference;
  const auto zeroed = ablated->forward(ids), reference = without.forward(ids);
  EXPECT_TRUE(torch::allclose(zeroed, reference, 1e-5, 1e-5));
  EXPECT_FALSE(torch::allclose(planted.forward(ids), reference, 1e-2, 1e-2)) << "the massive entry mattered";
  // A model without massive activations runs unchanged.
  const auto plain = test::random_model(config, 5);
  EXPECT_TRUE(torch::equal(intervened_model(plain, parse_interventions({"massive=zero"}))->forward(ids),
                           plain.forward(ids)));
}

TEST(Interventions, MassiveActivationsSetToTheirCalibrationMeans) {
  // Calibrated on the model's own input, whose massive entries (token 7 twice, dimension 3)
  // are all 5000: setting them to their mean leaves every value as it was — the same logits.
  LoadedModel loaded;
  loaded.path = "planted";
  loaded.model = std::make_unique<Transformer>(planted_massive(5000.0));
  const std::vector<int64_t> ids = {1, 7, 4, 7, 9, 2};
  auto m = compute_massive_activations(loaded, ids, 4);
  ASSERT_TRUE(m.means.defined());
  EXPECT_EQ(m.means_layer, 0);
  EXPECT_EQ(m.means[3].item<double>(), 5000.0);
  EXPECT_EQ(m.means.isnan().logical_not().sum().item<int64_t>(), 1) << "only dimension 3 was massive";
  const auto path = (test::scratch_dir() / "massive_means.h5").string();
  const AnalysisInput input{ids, std::vector<std::string>(ids.size(), "t")};
  write_massive_activations_hdf5(path, m, input, export_metadata(loaded));
  const auto batch = torch::tensor(ids, torch::kLong).unsqueeze(0);
  const auto same = intervened_model(*loaded.model, parse_interventions({"massive=mean:" + path}));
  EXPECT_TRUE(same->config().ablate_massive_activations);
  EXPECT_THAT(same->config().interventions, HasSubstr("massive activations set to their means (" + path + ")"));
  c10::InferenceMode inference;
  const auto planted = loaded.model->forward(batch);
  EXPECT_TRUE(torch::equal(same->forward(batch), planted));
  // Means of 2500 (a file calibrated elsewhere): the forward of the table holding 2500 there —
  // close to the planted one (the next RMSNorm sees one dominant entry either way, the paper's
  // point), far from zeroing it.
  m.means[3] = 2500.0;
  write_massive_activations_hdf5(path, m, input, export_metadata(loaded));
  const auto halved = intervened_model(*loaded.model, parse_interventions({"massive=mean:" + path}))->forward(batch);
  EXPECT_TRUE(torch::allclose(halved, planted_massive(2500.0).forward(batch), 1e-5, 1e-5));
  EXPECT_FALSE(torch::allclose(halved, planted, 1e-5, 1e-5));
  const auto zeroed = intervened_model(*loaded.model, parse_interventions({"massive=zero"}))->forward(batch);
  EXPECT_GT((zeroed - planted).abs().max().item<float>(), 100 * (halved - planted).abs().max().item<float>());
  // What cannot work is named: both ablations, a file without means, means of another width.
  EXPECT_THAT(test::error_of([&] { parse_interventions({"massive=zero", "massive=mean:" + path}); }),
              HasSubstr("choose one"));
  EXPECT_THAT(test::error_of([&] { parse_interventions({"massive=median"}); }), HasSubstr("massive=mean:FILE"));
  LoadedModel plain;
  plain.model = std::make_unique<Transformer>(test::random_model(test::small_config(kRope, 2), 5));
  const auto none = compute_massive_activations(plain, ids, 4);
  EXPECT_FALSE(none.means.defined());
  write_massive_activations_hdf5(path, none, input, export_metadata(loaded));
  EXPECT_THAT(test::error_of([&] { intervened_model(*loaded.model, parse_interventions({"massive=mean:" + path})); }),
              HasSubstr("the file has no means"));
  m.means = torch::zeros({5}, torch::kDouble);
  write_massive_activations_hdf5(path, m, input, export_metadata(loaded));
  EXPECT_THAT(test::error_of([&] { intervened_model(*loaded.model, parse_interventions({"massive=mean:" + path})); }),
              HasSubstr("5 means, for a model with d_model"));
}

TEST(Interventions, TheModelNamesWhatItRunsWithAndItsFilesRecordIt) {
  const auto model = test::random_model(test::small_config(kRope, 2), 8);
  const auto iv = parse_interventions({"p-rope=0.5", "mask-first-key"});
  LoadedModel loaded;
  loaded.path = "random";
  loaded.model = intervened_model(model, iv);
  EXPECT_EQ(loaded.model->config().interventions, "p-RoPE 0.5, first token masked as a key");
  EXPECT_THAT(loaded.model->config().to_json(), HasSubstr(R"("mask_first_key":true)"));
  EXPECT_THAT(describe(loaded), HasSubstr("interventions:     p-RoPE 0.5, first token masked as a key"));
  // Applied again on top, both are named.
  EXPECT_EQ(intervened_model(*loaded.model, parse_interventions({"temperature=L1:2"}))->config().interventions,
            "p-RoPE 0.5, first token masked as a key, L1 τ 2");
  const auto dir = test::scratch_dir();
  const auto path = (dir / "run.h5").string();
  export_run(path, loaded, run_model(loaded, {3, 1, 4, 1, 5}, CaptureSpec({"logits"})));
  EXPECT_EQ(Hdf5Reader(path).string_attribute("/", "interventions"), "p-RoPE 0.5, first token masked as a key");
  loaded.model = std::make_unique<Transformer>(model.config(), model.weights());
  export_run(path, loaded, run_model(loaded, {3, 1, 4, 1, 5}, CaptureSpec({"logits"})));
  EXPECT_EQ(Hdf5Reader(path).string_attribute("/", "interventions"), "") << "the checkpoint as stored";
}

TEST(Interventions, TheCliSpellingsParse) {
  const auto iv = parse_interventions(
      {"p-rope=0.25", "temperature=L3H1:2", "temperature=L2:0.5", "no-sinks", "mask-first-key", "massive=zero"});
  EXPECT_EQ(iv.describe(),
            "p-RoPE 0.25, L3H1 τ 2, L2 τ 0.5, no learned sinks, first token masked as a key, massive activations zeroed");
  EXPECT_EQ(iv.temperatures.at(1).head, -1);
  EXPECT_TRUE(parse_interventions({}).empty());
  EXPECT_EQ(parse_interventions({}).describe(), "none");
  for (const char* bad : {"p-rope=2", "p-rope=x", "temperature=L3H:2", "temperature=L3H1", "temperature=L1:0", "sinks",
                          "mask-first-key=1", "massive=mean"})
    EXPECT_THROW(parse_interventions({bad}), Error) << bad;
  try {
    parse_interventions({"massive=mean"});
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("massive=mean:FILE (a massive-activations file)"));
  }
  try {
    parse_interventions({"temperatur=L1:2"});
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("--intervene temperatur=L1:2: expected p-rope=P"));
  }
}

}  // namespace
}  // namespace poslens
