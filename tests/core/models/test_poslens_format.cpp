// The PosLens model format (docs/poslens-format.md): small models written here load, produce
// the hook points of their position encoding, and the captured position terms follow the
// formulas (checked against values computed in the test from other captures). Bad configs and
// weights fail with messages that say what and where. Numerical parity of every component with
// the PyTorch reference is in test_poslens_reference.cpp.
#include <torch/torch.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "core/position/alibi.h"
#include "core/runtime/checkpoint.h"
#include "core/base/error.h"
#include "core/formats/safetensors.h"
#include "fixtures.h"

namespace poslens {
namespace {

using ::testing::HasSubstr;
using Tensors = std::vector<std::pair<std::string, at::Tensor>>;

constexpr int64_t kD = 16, kLayers = 2, kHeads = 4, kHead = 4, kMlp = 32, kVocab = 20, kCtx = 32;

/// Config text with the block above and `position_encoding` (a JSON list) plus `extra` keys.
std::string config(const std::string& position_encoding, const std::string& extra = "") {
  return R"({"model_type": "poslens", "d_model": 16, "n_layers": 2, "n_heads": 4, "d_mlp": 32,
             "vocab_size": 20, "n_ctx": 32, )" +
         extra + R"("position_encoding": )" + position_encoding + "}";
}

at::Tensor r(std::vector<int64_t> shape) { return torch::randn(shape) * 0.4; }

Tensors block_weights() {
  torch::manual_seed(3);
  Tensors t{{"tok_embed.weight", r({kVocab, kD})}, {"final_norm.weight", 1 + r({kD})},
            {"lm_head.weight", r({kVocab, kD})}};
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "blocks." + std::to_string(l) + ".";
    t.insert(t.end(), {{p + "attn_norm.weight", 1 + r({kD})}, {p + "mlp_norm.weight", 1 + r({kD})},
                       {p + "attn.q_proj.weight", r({kHeads * kHead, kD})},
                       {p + "attn.k_proj.weight", r({kHeads * kHead, kD})},
                       {p + "attn.v_proj.weight", r({kHeads * kHead, kD})},
                       {p + "attn.o_proj.weight", r({kD, kHeads * kHead})},
                       {p + "mlp.gate_proj.weight", r({kMlp, kD})},
                       {p + "mlp.up_proj.weight", r({kMlp, kD})},
                       {p + "mlp.down_proj.weight", r({kD, kMlp})}});
  }
  return t;
}

std::filesystem::path write_model(const std::string& config_text, const Tensors& pe = {}) {
  const auto dir = test::scratch_dir() / "model";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << config_text;
  auto tensors = block_weights();
  tensors.insert(tensors.end(), pe.begin(), pe.end());
  write_safetensors((dir / "model.safetensors").string(), tensors);
  return dir;
}

/// Per-layer tensors `blocks.{l}.attn.pe.<name>` for every layer.
Tensors per_layer(const std::string& name, std::vector<int64_t> shape) {
  Tensors t;
  for (int l = 0; l < kLayers; ++l) t.push_back({"blocks." + std::to_string(l) + ".attn.pe." + name, r(shape)});
  return t;
}

const at::Tensor kTokens = torch::tensor({{1, 5, 9, 3, 3, 7, 2, 11}}, torch::kLong);
constexpr int64_t kT = 8;

Captures run_all(const LoadedModel& m) {
  Captures c;
  m.model->forward(kTokens, CaptureSpec::all(), &c);
  return c;
}

at::Tensor causal_allowed() { return torch::ones({kT, kT}, torch::kBool).tril(); }

bool has_hook(const LoadedModel& m, HookKind kind) {
  for (const auto& p : m.model->hook_points())
    if (p.kind == kind) return true;
  return false;
}

TEST(PosLensFormat, EmptyListIsNoPE) {
  const auto m = load_checkpoint(write_model(config("[]")).string());
  EXPECT_EQ(m.format, "poslens (safetensors)");
  EXPECT_THAT(describe(m), HasSubstr("NoPE"));
  EXPECT_FALSE(has_hook(m, HookKind::PosScores));
  EXPECT_FALSE(has_hook(m, HookKind::RotQ));
  EXPECT_EQ(m.model->forward(kTokens).sizes(), (at::IntArrayRef{1, kT, kVocab}));
}

TEST(PosLensFormat, AlibiScoresAreContentPlusSlopeTimesDistance) {
  const auto m = load_checkpoint(write_model(config(R"([{"type": "alibi"}])")).string());
  EXPECT_THAT(describe(m), HasSubstr("ALiBi (4 heads)"));
  const auto c = run_all(m);
  const auto pos = c.find({HookKind::PosScores, 1});
  const auto scores = c.find({HookKind::AttnScores, 1});
  const auto q = c.find({HookKind::Q, 1}), k = c.find({HookKind::K, 1});
  ASSERT_TRUE(pos.defined() && scores.defined() && q.defined() && k.defined());
  const auto slopes = alibi_slopes(kHeads);  // 2^-2, 2^-4, 2^-6, 2^-8
  for (int h = 0; h < kHeads; ++h)
    for (int i = 0; i < kT; ++i)
      for (int j = 0; j < kT; ++j) {
        if (j > i) {
          EXPECT_EQ(pos[0][h][i][j].item<float>(), 0.0f);
          EXPECT_TRUE(std::isinf(scores[0][h][i][j].item<float>()));
          continue;
        }
        const double bias = -slopes[h] * (i - j);
        EXPECT_NEAR(pos[0][h][i][j].item<float>(), bias, 1e-6);
        const double content = (q[0][i][h] * k[0][j][h]).sum().item<double>() / 2.0;  // 1/sqrt(4)
        EXPECT_NEAR(scores[0][h][i][j].item<float>(), content + bias, 1e-5);
      }
}

TEST(PosLensFormat, CopeGatesArePositiveOnlyOnVisibleKeysAndPositionsCountThem) {
  auto pe = per_layer("cope_pos_emb", {kHead, 6});
  const auto m = load_checkpoint(
      write_model(config(R"([{"type": "rope", "pairing": "interleaved"}, {"type": "cope", "npos_max": 6}])"), pe)
          .string());
  EXPECT_THAT(describe(m), HasSubstr("RoPE (interleaved pairs"));
  EXPECT_THAT(describe(m), HasSubstr("+ CoPE (npos_max=6, gates=keys, divide_all, per layer)"));
  const auto c = run_all(m);
  const auto gates = c.find({HookKind::CopeGates, 0}), positions = c.find({HookKind::CopePos, 0});
  const auto q = c.find({HookKind::RotQ, 0}), k = c.find({HookKind::RotK, 0});
  ASSERT_TRUE(gates.defined() && positions.defined() && q.defined() && k.defined());
  // g_ij = sigmoid(q_i·k_j / sqrt(d)) on visible keys (after RoPE: CoPE+RoPE), 0 on masked ones.
  const auto qk = torch::einsum("bihd,bjhd->bhij", {q, k}) / 2.0;
  const auto expected = torch::sigmoid(qk).masked_fill(causal_allowed().logical_not(), 0.0);
  EXPECT_TRUE(torch::allclose(gates, expected, 1e-5, 1e-6));
  // p_ij = min(sum_{t=j..i} g_it, npos_max - 1).
  const auto counted = expected.flip({-1}).cumsum(-1).flip({-1}).clamp_max(5.0);
  EXPECT_TRUE(torch::allclose(positions, counted, 1e-5, 1e-5));
  EXPECT_GT(positions.max().item<float>(), 1.0f);
}

TEST(PosLensFormat, ShawValueTableIsAddedToZ) {
  torch::manual_seed(5);
  const auto keys = r({4, kHead}), values = r({4, kHead});
  const Tensors pe{{"pe.shaw_key", keys}, {"pe.shaw_value", values}};
  const auto m = load_checkpoint(
      write_model(config(R"([{"type": "shaw", "max_distance": 3, "values": true, "shared": true}])"), pe)
          .string());
  const auto c = run_all(m);
  const auto pattern = c.find({HookKind::Pattern, 0}), v = c.find({HookKind::V, 0});
  const auto z = c.find({HookKind::Z, 0});
  for (int h = 0; h < kHeads; ++h)
    for (int i = 0; i < kT; ++i) {
      auto expected = torch::zeros({kHead});
      for (int j = 0; j <= i; ++j)
        expected += pattern[0][h][i][j] * (v[0][j][h] + values[std::min(i - j, 3)]);
      EXPECT_TRUE(torch::allclose(z[0][i][h], expected, 1e-5, 1e-6)) << "h=" << h << " i=" << i;
    }
}

TEST(PosLensFormat, HeinsenStateIsCapturedAndItsProjectionAdded) {
  torch::manual_seed(9);
  const int64_t d_pe = 3;
  const Tensors pe{{"pe.heinsen_p.weight", r({d_pe, kD})}, {"pe.heinsen_p.bias", r({d_pe})},
                   {"pe.heinsen_h.weight", r({d_pe, kD})}, {"pe.heinsen_h.bias", r({d_pe})},
                   {"pe.heinsen_r.weight", r({kD, d_pe})}, {"pe.heinsen_r.bias", r({kD})}};
  const auto m = load_checkpoint(write_model(config(R"([{"type": "heinsen", "d_pe": 3}])"), pe).string());
  const auto c = run_all(m);
  const auto state = c.find({HookKind::PeState, -1}), added = c.find({HookKind::PosEmbed, -1});
  const auto tok = c.find({HookKind::Embed, -1});
  ASSERT_TRUE(state.defined() && added.defined());
  EXPECT_EQ(state.sizes(), (at::IntArrayRef{1, kT, d_pe}));
  // The sequential recurrence from s_0 = 0, written out here.
  auto s = torch::zeros({d_pe});
  for (int i = 0; i < kT; ++i) {
    const auto log_p = torch::log_sigmoid(at::linear(tok[0][i], pe[0].second, pe[1].second));
    const auto h = at::linear(tok[0][i], pe[2].second, pe[3].second);
    s = torch::logaddexp(log_p + s, h);
    EXPECT_TRUE(torch::allclose(state[0][i], s, 1e-5, 1e-5)) << "i=" << i;
    EXPECT_TRUE(torch::allclose(added[0][i], at::linear(s, pe[4].second, pe[5].second), 1e-5, 1e-5));
  }
  EXPECT_TRUE(torch::allclose(c.find({HookKind::ResidPre, 0}), tok + added));
}

TEST(PosLensFormat, SharedWeightsAreModelLevelAndPerLayerWeightsPerBlock) {
  const auto shared = load_checkpoint(
      write_model(config(R"([{"type": "t5", "num_buckets": 8, "max_distance": 16}])"),
                  {{"pe.t5_bias", r({8, kHeads})}})
          .string());
  EXPECT_THAT(describe(shared), HasSubstr("T5 bucket bias (8 buckets, max_distance=16, causal, shared"));
  const auto separate = load_checkpoint(
      write_model(config(R"([{"type": "t5", "num_buckets": 8, "max_distance": 16, "shared": false}])"),
                  per_layer("t5_bias", {8, kHeads}))
          .string());
  const auto c = run_all(separate);
  EXPECT_FALSE(torch::equal(c.find({HookKind::PosScores, 0}), c.find({HookKind::PosScores, 1})));
}

TEST(PosLensFormat, InfoJsonListsTheComponents) {
  const auto m = load_checkpoint(
      write_model(config(R"([{"type": "kerple", "variant": "power"}])"),
                  [] {
                    auto t = per_layer("kerple_p", {kHeads});
                    auto a = per_layer("kerple_a", {kHeads});
                    t.insert(t.end(), a.begin(), a.end());
                    return t;
                  }())
          .string());
  const auto json = m.model->config().to_json();
  EXPECT_THAT(json, HasSubstr(R"("position_encoding":[{"type":"kerple","variant":"power"}])"));
  EXPECT_THAT(describe(m), HasSubstr("KERPLE (power, per layer)"));
}

/// The message of the Error that loading `config_text` (+ pe weights) throws.
std::string load_error(const std::string& config_text, const Tensors& pe = {}) {
  try {
    load_checkpoint(write_model(config_text, pe).string());
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(PosLensFormat, BadConfigsSayWhatAndWhere) {
  EXPECT_THAT(load_error(config(R"([{"type": "rotary"}])")),
              AllOf(HasSubstr("config.json"), HasSubstr("unknown position_encoding type \"rotary\""),
                    HasSubstr("known: none, learned_absolute")));
  EXPECT_THAT(load_error(config(R"([{"type": "alibi", "slope": 2}])")),
              HasSubstr("position_encoding \"alibi\": unknown parameter \"slope\""));
  EXPECT_THAT(load_error(config(R"([{"type": "alibi"}, {"type": "alibi"}])")),
              HasSubstr("\"alibi\" appears twice"));
  EXPECT_THAT(load_error(config(R"([{"type": "rope"}, {"type": "hope"}])")),
              HasSubstr("at most one rotary component"));
  EXPECT_THAT(load_error(config(R"([{"type": "cope"}])")), HasSubstr("missing \"npos_max\""));
  EXPECT_THAT(load_error(config(R"([{"type": "cope", "npos_max": 4, "gates": "queries"}])")),
              HasSubstr("\"gates\" must be one of keys, sep_keys, values"));
  EXPECT_THAT(load_error(config(R"([{"type": "shaw", "max_distance": 2}])", R"("causal": false, )")),
              HasSubstr("supported for causal models only"));
  EXPECT_THAT(load_error(config("[]", R"("format_version": 2, )")), HasSubstr("format_version 2"));
  EXPECT_THAT(load_error(config("[]", R"("n_head": 4, )")), HasSubstr("unknown key \"n_head\""));
  EXPECT_THAT(load_error(config(R"([{"type": "rope", "rotary_dim": 3}])")),
              HasSubstr("\"rotary_dim\" must be even"));
}

TEST(PosLensFormat, BadWeightsNameTheTensor) {
  EXPECT_THAT(load_error(config(R"([{"type": "shaw", "max_distance": 2}])"),
                         {{"blocks.0.attn.pe.shaw_key", r({3, kHead})}}),
              HasSubstr("missing tensor blocks.1.attn.pe.shaw_key"));
  EXPECT_THAT(load_error(config(R"([{"type": "shaw", "max_distance": 2}])"),
                         per_layer("shaw_key", {4, kHead})),
              AllOf(HasSubstr("expected [3, 4], got [4, 4]"), HasSubstr("blocks.0.attn.pe.shaw_key")));
  EXPECT_THAT(load_error(config("[]"), {{"pe.pos_embed", r({kCtx, kD})}}),
              HasSubstr("unexpected tensors"));
}

}  // namespace
}  // namespace poslens
