// Position-only attention, CoPE counting, the absolute-PE decomposition and head metrics
// (analysis/position_map.h, absolute_terms.h, heads.h) against known answers: ALiBi's
// closed form, the probe behind rotary maps, the terms summing to the logits, hand-made patterns.
#include <torch/torch.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "analysis/absolute_terms.h"
#include "analysis/heads.h"
#include "analysis/position_map.h"
#include "analysis/probe.h"
#include "core/models/poslens_model.h"
#include "core/runtime/transformer.h"
#include "fixtures.h"

namespace poslens {
namespace {

ModelConfig config_with(const std::string& position_encoding, const std::string& block = "") {
  return poslens_config_from_text(
      R"({"model_type": "poslens", "d_model": 16, "n_layers": 2, "n_heads": 2, "d_mlp": 32, )"
      R"("vocab_size": 20, "n_ctx": 16, "bos_token_id": 0, )" +
          block + R"("position_encoding": )" + position_encoding + "}",
      "test");
}

LoadedModel loaded(const ModelConfig& config, uint64_t seed) {
  LoadedModel m;
  m.path = "in-memory";
  m.model = std::make_unique<Transformer>(config, initialize_weights(config, seed));
  return m;
}

const std::vector<int64_t> kIds = {0, 3, 7, 3, 9, 12, 3, 5};

/// `hook` (a hook of every layer) of `model` on kIds, batch 0, stacked: [layer, head, q, k].
at::Tensor captured(const LoadedModel& model, const std::string& hook, HookKind kind) {
  c10::InferenceMode guard;
  Captures caps;
  model.model->forward(torch::tensor(kIds).unsqueeze(0), CaptureSpec({hook}), &caps);
  std::vector<at::Tensor> layers;
  for (int l = 0; l < model.model->config().n_layers; ++l) layers.push_back(caps.find({kind, l})[0]);
  return torch::stack(layers);
}

TEST(PositionMap, AlibiMatchesTheClosedForm) {
  const auto model = loaded(config_with(R"([{"type": "alibi"}])"), 1);
  const auto r = position_map_whole(model, kIds);
  ASSERT_EQ(r.methods, (std::vector<std::string>{"additive", "additive"}));
  const int64_t T = 8;
  const auto i = torch::arange(T, torch::kFloat).unsqueeze(1);
  const auto j = torch::arange(T, torch::kFloat).unsqueeze(0);
  const auto allowed = j <= i;
  for (int h = 0; h < 2; ++h) {
    const double m = std::pow(2.0, -8.0 * (h + 1) / 2);  // ALiBi slopes for 2 heads
    auto p = torch::softmax((-m * (i - j)).masked_fill(allowed.logical_not(), -INFINITY), -1);
    p = p / std::get<0>(p.max(-1, true));
    for (int l = 0; l < 2; ++l)
      EXPECT_TRUE(torch::allclose(r.position_map[l][h], p, 1e-5, 1e-6)) << "layer " << l << " head " << h;
  }
  // Row maxima are 1, masked entries 0; the pattern is normalised the same way.
  EXPECT_TRUE(torch::allclose(std::get<0>(r.position_map.max(-1)), torch::ones({2, 2, T})));
  EXPECT_EQ(r.position_map.masked_select(allowed.logical_not()).abs().sum().item<float>(), 0.0f);
  EXPECT_TRUE(torch::allclose(std::get<0>(r.pattern.max(-1)), torch::ones({2, 2, T})));
}

TEST(PositionMap, NopeIsUniformOverAllowedKeys) {
  const auto model = loaded(config_with("[]"), 2);
  const auto r = position_map_whole(model, kIds);
  EXPECT_EQ(r.methods.front(), "uniform");
  const auto allowed = allowed_keys(model.model->config(), 8, torch::kCPU);
  EXPECT_TRUE(r.position_map[1][0].equal(allowed.to(torch::kFloat)));
  EXPECT_THAT(r.explanation, ::testing::HasSubstr("uniform"));
}

TEST(PositionMap, RotaryMapsAreTheProbesCurveByDistance) {
  const auto model = loaded(config_with(R"([{"type": "rope", "rope_theta": 100}])"), 3);
  PositionMapOptions options;
  options.probe_samples = 0;
  const auto r = position_map_whole(model, kIds, options);
  EXPECT_EQ(r.methods.front(), "rotary");
  ProbeOptions probe;
  probe.length = 8;
  const auto p = run_probe(model, probe);
  // The last query's row is the probe's curve itself; row i is its last i+1 keys.
  const auto expected = row_normalised_softmax(p.scores.unsqueeze(2), torch::ones({1, 8}, torch::kBool));
  EXPECT_TRUE(torch::allclose(r.position_map.select(2, 7), expected.squeeze(2), 1e-5, 1e-6));
  const auto row3 = row_normalised_softmax(p.scores.slice(-1, 4).unsqueeze(2),
                                           torch::ones({1, 4}, torch::kBool));
  EXPECT_TRUE(torch::allclose(r.position_map.select(2, 3).slice(-1, 0, 4), row3.squeeze(2), 1e-5, 1e-6));
}

TEST(PositionMap, AbsoluteTermsSumToTheLayerZeroLogits) {
  for (const char* block : {R"("norm": "layernorm", "qkv_bias": true, )", "", R"("n_kv_heads": 1, )"}) {
    SCOPED_TRACE(block);
    const auto model = loaded(config_with(R"([{"type": "learned_absolute"}])", block), 4);
    const auto r = position_map_whole(model, kIds);
    EXPECT_EQ(r.methods.front(), "absolute");
    ASSERT_TRUE(r.absolute.has_value());
    const auto& a = *r.absolute;
    const auto sum = a.token_token + a.token_position + a.position_token + a.position_position + a.bias;
    const auto allowed = allowed_keys(model.model->config(), 8, torch::kCPU);
    const auto logits = captured(model, "blocks.*.attn.hook_attn_scores", HookKind::AttnScores)[0];
    const auto diff = (sum - logits).abs().masked_select(allowed.expand_as(sum)).max().item<double>();
    EXPECT_LT(diff, 1e-4 * logits.masked_select(allowed.expand_as(sum)).abs().max().item<double>());
    // Layer 0's position-only logits: the position embeddings alone through its norm and q/k.
    c10::InferenceMode guard;
    Captures caps;
    model.model->forward(torch::tensor(kIds).unsqueeze(0), CaptureSpec({"hook_pos_embed"}), &caps);
    const auto direct = model.model->qk_logits(0, caps.find({HookKind::PosEmbed, -1}))[0];
    EXPECT_TRUE(torch::allclose(r.position_map[0], row_normalised_softmax(direct, allowed), 1e-5, 1e-6));
  }
}

TEST(PositionMap, CopeCountingAveragesGatesPerKeyAndToken) {
  // Two layers, one head, T = 3, ids a b a: gates on the keys the queries see.
  const auto allowed = torch::tensor({1, 0, 0, 1, 1, 0, 1, 1, 1}, torch::kBool).view({3, 3});
  const auto gates = torch::tensor({1.0f, 0.0f, 0.0f, 0.5f, 0.2f, 0.0f, 0.0f, 0.4f, 0.9f}).view({1, 1, 3, 3}).repeat({2, 1, 1, 1});
  const auto c = cope_counting(gates, allowed, {5, 6, 5});
  EXPECT_TRUE(torch::allclose(c.mean_gate_per_key[0][0], torch::tensor({0.5f, 0.3f, 0.9f})));
  EXPECT_EQ(c.token_ids, (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(c.token_counts, (std::vector<int64_t>{2, 1}));
  EXPECT_TRUE(torch::allclose(c.mean_gate_per_token[1][0], torch::tensor({0.7f, 0.3f})));
}

TEST(PositionMap, CopeModelsGetTheirTermAndCounting) {
  const auto model = loaded(config_with(R"([{"type": "cope", "npos_max": 8}])"), 5);
  const auto r = position_map_whole(model, kIds);
  EXPECT_EQ(r.methods.front(), "cope");
  ASSERT_TRUE(r.cope.has_value());
  EXPECT_EQ(r.cope->token_ids.size(), 6u);  // 0 3 7 9 12 5
  EXPECT_EQ(r.cope->token_counts[1], 3);    // token 3 three times
  const auto terms = captured(model, "blocks.*.attn.hook_pos_scores", HookKind::PosScores);
  EXPECT_TRUE(torch::allclose(r.position_map,
                              row_normalised_softmax(terms, allowed_keys(model.model->config(), 8, torch::kCPU))));
}

TEST(PositionMap, CopeGatesOnlyOnASeparatorPeakOnTheLastSegment) {
  // One head whose gates are 1 exactly on separator keys (token 1) and whose position embedding
  // favours p = 0: p_ij counts the separators in j..i (Golovneva et al. 2024 §3), so every query's map is 1
  // on the keys after its last separator (the current segment) and ~0 up to it. A query on a
  // separator (p ≥ 1 for every key) or before any (p = 0 for every key) sees a uniform row.
  const auto config = poslens_config_from_text(
      R"({"model_type": "poslens", "d_model": 16, "n_layers": 1, "n_heads": 1, "d_mlp": 32, )"
      R"("vocab_size": 6, "n_ctx": 16, "norm": "rmsnorm", )"
      R"("position_encoding": [{"type": "cope", "npos_max": 8}]})", "test");
  auto w = initialize_weights(config, 7);
  // Embeddings of equal norm: dim 1 is on for every token (drives the query), dim 0 is +1 on the
  // separator and −1 elsewhere (drives the key). RMSNorm maps each to 2× itself.
  w.tok_embed = torch::zeros({6, 16});
  for (int64_t t = 0; t < 6; ++t) {
    w.tok_embed[t][1] = 1.0f;
    w.tok_embed[t][0] = t == 1 ? 1.0f : -1.0f;
  }
  auto& layer = w.layers[0];
  layer.w_q = torch::zeros({16, 16});
  layer.w_q[0][1] = 10.0f;  // q_0 = 20 for every token
  layer.w_k = torch::zeros({16, 16});
  layer.w_k[0][0] = 10.0f;  // k_0 = ±20: gate logit ±400 · 1/4 → sigmoid 1 or 0
  for (auto* bias : {&layer.b_q, &layer.b_k})
    if (bias->defined()) bias->zero_();
  auto pos_emb = torch::zeros({16, 8});
  pos_emb[0][0] = 2.0f;  // z_i[0] = 40, every other position 0
  w.pe.layers[0]["cope_pos_emb"] = pos_emb;
  LoadedModel model;
  model.path = "in-memory";
  model.model = std::make_unique<Transformer>(config, std::move(w));

  const std::vector<int64_t> ids = {0, 2, 1, 3, 4, 1, 2, 5, 3, 1, 4};
  const auto r = position_map_whole(model, ids);
  ASSERT_TRUE(r.cope.has_value());
  const auto map = r.position_map[0][0];
  int64_t last_separator = -1;
  for (int64_t i = 0; i < static_cast<int64_t>(ids.size()); ++i) {
    const bool on_separator = ids[static_cast<size_t>(i)] == 1;
    if (on_separator) last_separator = i;
    const int64_t start = on_separator ? 0 : last_separator + 1;
    for (int64_t j = 0; j <= i; ++j) {
      const float v = map[i][j].item<float>();
      if (j >= start) EXPECT_NEAR(v, 1.0f, 1e-4) << "query " << i << " key " << j;
      else EXPECT_LT(v, 1e-3f) << "query " << i << " key " << j;
    }
  }
  // What it counts: the separator's mean gate is 1, every other token's 0.
  const auto& c = *r.cope;
  for (size_t t = 0; t < c.token_ids.size(); ++t)
    EXPECT_NEAR(c.mean_gate_per_token[0][0][static_cast<int64_t>(t)].item<float>(),
                c.token_ids[t] == 1 ? 1.0f : 0.0f, 1e-4) << "token " << c.token_ids[t];
}

TEST(HeadMetrics, HandMadePatterns) {
  const int64_t T = 4;
  const auto allowed = torch::tril(torch::ones({T, T}, torch::kBool));
  const auto uniform = allowed.to(torch::kFloat) / allowed.sum(-1, true);
  auto previous = torch::zeros({T, T});
  previous[0][0] = 1;
  for (int i = 1; i < T; ++i) previous[i][i - 1] = 1;
  auto sink = torch::zeros({T, T});
  sink.select(1, 0).fill_(1);
  const auto pattern = torch::stack({uniform, previous, sink}).unsqueeze(0);  // [1, 3, T, T]
  const auto m = head_metrics(pattern, allowed).values[0];  // [head, metric]
  // float32 patterns: agreement to float32 rounding.
  EXPECT_NEAR(m[0][0].item<double>(), (std::log(2) + std::log(3) + std::log(4)) / 4, 1e-6);
  EXPECT_NEAR(m[0][1].item<double>(), (0 + 0.5 + 1 + 1.5) / 4, 1e-6);
  EXPECT_NEAR(m[0][2].item<double>(), (1 + 0.5 + 1.0 / 3 + 0.25) / 4, 1e-6);
  const auto col = [](const std::string& name) {
    return std::find(head_metric_names().begin(), head_metric_names().end(), name) - head_metric_names().begin();
  };
  const auto share_col = col("position_share");
  // TransformerLens's previous-token score: Σ(A ⊙ D)/Σ A — row 0 has no previous token.
  EXPECT_NEAR(m[1][col("previous_token")].item<double>(), 3.0 / 4, 1e-12);
  EXPECT_NEAR(m[1][0].item<double>(), 0.0, 1e-12);  // one key per query
  EXPECT_NEAR(m[2][2].item<double>(), 1.0, 1e-12);  // sink
  EXPECT_NEAR(m[2][1].item<double>(), 1.5, 1e-12);  // mean distance to key 0
  EXPECT_TRUE(std::isnan(m[0][share_col].item<double>()));  // no position term given
  EXPECT_TRUE(std::isnan(m[0][col("duplicate_token")].item<double>()));  // no tokens given
  EXPECT_NEAR(m[2][col("sink_4")].item<double>(), 1.0, 1e-12);
  // Position share: logits made only of the position term give 1; a zero term gives 0.
  const auto logits = torch::randn({1, 3, T, T});
  const auto share = head_metrics(pattern, allowed, logits, logits).values[0];
  EXPECT_NEAR(share[1][share_col].item<double>(), 1.0, 1e-9);
  const auto none = head_metrics(pattern, allowed, logits, torch::zeros_like(logits)).values[0];
  EXPECT_NEAR(none[1][share_col].item<double>(), 0.0, 1e-12);
  EXPECT_THAT(test::error_of([&] { head_metrics(pattern, torch::ones({3, 3}, torch::kBool)); }),
              ::testing::HasSubstr("head_metrics"));
}

}  // namespace
}  // namespace poslens
