// Interventions (analysis/interventions.h), by their known answers: p-RoPE with p = 0 changes
// nothing and with p = 1 is the NoPE forward of the same weights; p = 0.5 stops exactly the
// lowest half of θ_c; a head's temperature divides that head's logits and no other's; removing
// gpt-oss's learned sinks makes every row of its patterns sum to 1; what does not apply is
// refused with the reason; the CLI's spellings parse.
#include <torch/torch.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "analysis/interventions.h"
#include "core/base/error.h"
#include "core/runtime/capture_sink.h"
#include "core/runtime/checkpoint.h"
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

TEST(Interventions, TheCliSpellingsParse) {
  const auto iv = parse_interventions({"p-rope=0.25", "temperature=L3H1:2", "temperature=L2:0.5", "no-sinks"});
  EXPECT_EQ(iv.describe(), "p-RoPE 0.25, L3H1 τ 2, L2 τ 0.5, no learned sinks");
  EXPECT_EQ(iv.temperatures.at(1).head, -1);
  EXPECT_TRUE(parse_interventions({}).empty());
  EXPECT_EQ(parse_interventions({}).describe(), "none");
  for (const char* bad : {"p-rope=2", "p-rope=x", "temperature=L3H:2", "temperature=L3H1", "temperature=L1:0", "sinks"})
    EXPECT_THROW(parse_interventions({bad}), Error) << bad;
  try {
    parse_interventions({"temperatur=L1:2"});
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("--intervene temperatur=L1:2: expected p-rope=P"));
  }
}

}  // namespace
}  // namespace poslens
