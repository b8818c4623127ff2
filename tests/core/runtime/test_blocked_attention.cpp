// Attention in blocks (core/runtime/attention.h) against the whole [T, T] computation
// (reference::whole_attention, the pre-blocking algorithm), for every position method of
// docs/formulas.md §2, GQA, sliding windows and bidirectional models: blocks of 4 query rows and key
// chunks of 5 (so no boundary lines up with anything) must give the same logits, patterns,
// position terms, CoPE gates/positions and z to 1e-5, whether the maps are wanted (whole rows)
// or not (keys streamed with the online softmax). Recomputing some heads, or a region of one,
// gives that part of the whole map. With LibTorch 2.x the fused kernel (fused_attention.h)
// gives the blocked path's output to 1e-5 for every method it covers, and a region recomputed
// from the row log-sum-exp is that of the whole softmax to 1e-6, as are maps made on the fused
// path (z from the kernel, float32 patterns from its lse) at default block sizes. (Every architecture's parity
// suite also runs with POSLENS_ATTENTION_BLOCKS=3,5, which forces the blocked path:
// tests/CMakeLists.txt.)
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/models/poslens_model.h"
#include "core/runtime/attention.h"
#include "core/runtime/transformer.h"
#include "random_model.h"

namespace poslens {
namespace {

constexpr int64_t kT = 23;

struct Case {
  const char* name;
  const char* components;  ///< the config's position_encoding list
  bool causal = true;
  int64_t kv_heads = 4;
  int64_t window = 0;
  bool both_sides = false;  ///< ModelConfig::window_both_sides (ModernBERT's local layers)
  int64_t chunk = 0;        ///< ModelConfig::attention_chunk_size (Llama 4's chunked layers)
};

const Case kCases[] = {
    {"nope", "[]"},
    {"learned_absolute", R"([{"type": "learned_absolute"}])"},
    {"sinusoidal", R"([{"type": "sinusoidal"}])"},
    {"rope_interleaved", R"([{"type": "rope", "pairing": "interleaved"}])"},
    {"rope_partial", R"([{"type": "rope", "pairing": "half_split", "rotary_dim": 2}])"},
    {"hope", R"([{"type": "hope", "L": 8}])"},
    {"alibi", R"([{"type": "alibi"}])"},
    {"alibi_bidirectional", R"([{"type": "alibi"}])", false},
    {"t5", R"([{"type": "t5", "num_buckets": 8, "max_distance": 12}])"},
    {"t5_bidirectional", R"([{"type": "t5", "num_buckets": 8, "max_distance": 12}])", false},
    {"kerple_log", R"([{"type": "kerple", "variant": "log"}])"},
    {"kerple_power_bidirectional", R"([{"type": "kerple", "variant": "power"}])", false},
    {"fire", R"([{"type": "fire", "hidden": 8}])"},
    {"shaw_values", R"([{"type": "shaw", "max_distance": 3, "values": true}])"},
    {"transformer_xl", R"([{"type": "transformer_xl"}])"},
    {"transformer_xl_bidirectional", R"([{"type": "transformer_xl"}])", false},
    {"cope", R"([{"type": "cope", "npos_max": 6}])"},
    {"cope_sep_keys_no_div", R"([{"type": "cope", "npos_max": 6, "gates": "sep_keys", "logit_scale": "no_div"}])"},
    {"cope_values", R"([{"type": "cope", "npos_max": 6, "gates": "values"}])"},
    {"cope_alibi", R"([{"type": "cope", "npos_max": 6, "position": "alibi"}])"},
    {"cope_rope", R"([{"type": "rope"}, {"type": "cope", "npos_max": 6}])"},
    {"cope_t5_bidirectional", R"([{"type": "cope", "npos_max": 30}, {"type": "t5", "num_buckets": 8, "max_distance": 12}])", false},
    {"heinsen", R"([{"type": "heinsen", "d_pe": 3}])"},
    {"rope_gqa", R"([{"type": "rope"}])", true, 2},
    {"alibi_gqa", R"([{"type": "alibi"}])", true, 2},
    {"rope_sliding_window", R"([{"type": "rope"}])", true, 2, 6},
    {"cope_sliding_window", R"([{"type": "cope", "npos_max": 6}])", true, 4, 6},
    {"shaw_sliding_window", R"([{"type": "shaw", "max_distance": 3, "values": true}])", true, 4, 6},
    {"alibi_bidirectional_window", R"([{"type": "alibi"}])", false, 4, 6},
    {"rope_window_both_ways", R"([{"type": "rope"}])", false, 4, 6, true},
    {"t5_window_both_ways", R"([{"type": "t5", "num_buckets": 8, "max_distance": 12}])", false, 4, 6, true},
    {"rope_chunked", R"([{"type": "rope", "pairing": "interleaved"}])", true, 2, 0, false, 7},
    {"nope_chunked", "[]", true, 4, 0, false, 7},
    {"cope_chunked", R"([{"type": "cope", "npos_max": 6}])", true, 4, 0, false, 7},
    {"alibi_chunked", R"([{"type": "alibi"}])", true, 4, 0, false, 7},
};

ModelConfig config_of(const Case& c) {
  auto config = test::small_config(c.components, c.kv_heads, c.causal);
  config.sliding_window = c.window;
  config.window_both_sides = c.both_sides;
  config.attention_chunk_size = c.chunk;
  return config;
}

Transformer random_model(const ModelConfig& config) { return test::random_model(config); }

/// Keeps what every layer's attention was computed from.
class InputsSink : public HookSink {
 public:
  bool wants(const HookPoint&) const override { return false; }
  bool wants_attention_inputs(int) const override { return true; }
  void attention_inputs(const LayerAttentionInputs& in) override { layers.push_back(in); }
  std::vector<LayerAttentionInputs> layers;
};

const at::Tensor& tokens() {
  static const at::Tensor t = [] {
    torch::manual_seed(3);
    return torch::randint(0, 30, {2, kT}, torch::kLong);  // a batch of two
  }();
  return t;
}

/// a and b equal to `tolerance` (relative to 1), with −inf in the same places.
void expect_close(const at::Tensor& a, const at::Tensor& b, const std::string& what,
                  double tolerance = 1e-5) {
  ASSERT_TRUE(a.defined() && b.defined()) << what << " missing";
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  const auto fa = a.to(torch::kFloat64), fb = b.to(torch::kFloat64);
  EXPECT_TRUE(torch::equal(fa.isneginf(), fb.isneginf())) << what << ": masked entries differ";
  const auto finite = torch::isfinite(fa) & torch::isfinite(fb);
  const double diff = (fa - fb).abs().masked_select(finite).max().item<double>();
  EXPECT_LT(diff, tolerance) << what;
}

/// A random model of `c`, run once: what its second layer's attention was computed from, and
/// that layer's whole-map reference.
class SecondLayer {
 public:
  explicit SecondLayer(const Case& c) : config_(config_of(c)), model_(random_model(config_)) {
    c10::InferenceMode inference;
    model_.forward(tokens(), inputs_);
    whole_ = reference::whole_attention(config_, model_.position_encoding(), inputs_.layers[1]);
  }
  struct Parts {
    const ModelConfig& config;
    const PositionEncoding& pe;
    const LayerAttentionInputs& in;
    const reference::WholeAttention& whole;
  };
  Parts parts() const { return {config_, model_.position_encoding(), inputs_.layers[1], whole_}; }

 private:
  ModelConfig config_;
  Transformer model_;
  InputsSink inputs_;
  reference::WholeAttention whole_;
};

class BlockedAttention : public ::testing::TestWithParam<Case> {};

TEST_P(BlockedAttention, EqualsWholeAttentionWithMapsWanted) {
  const auto config = config_of(GetParam());
  const auto model = random_model(config);
  c10::InferenceMode inference;
  Captures captures;
  CaptureSink capture(CaptureSpec::all(), captures);
  InputsSink inputs;
  SinkFanout both({&capture, &inputs});
  model.forward(tokens(), both, {}, ForwardOptions{{4, 5}});
  ASSERT_EQ(inputs.layers.size(), 2u);
  const auto& pe = model.position_encoding();
  for (int l = 0; l < 2; ++l) {
    const auto whole = reference::whole_attention(config, pe, inputs.layers[l]);
    const std::string at = " of layer " + std::to_string(l);
    expect_close(captures.find({HookKind::AttnScores, l}), whole.scores, "scores" + at);
    expect_close(captures.find({HookKind::Pattern, l}), whole.pattern, "pattern" + at);
    expect_close(captures.find({HookKind::Z, l}), whole.z, "z" + at);
    if (pe.has_position_scores())
      expect_close(captures.find({HookKind::PosScores, l}), whole.position, "position" + at);
    if (pe.has_cope()) {
      expect_close(captures.find({HookKind::CopeGates, l}), whole.cope_gates, "gates" + at);
      expect_close(captures.find({HookKind::CopePos, l}), whole.cope_positions, "positions" + at);
    }
  }
}

TEST_P(BlockedAttention, StreamedKeysGiveTheSameLogits) {
  const auto config = config_of(GetParam());
  const auto model = random_model(config);
  c10::InferenceMode inference;
  Captures unused;
  CaptureSink patterns(CaptureSpec({"blocks.*.attn.hook_pattern"}), unused);
  CaptureSink nothing(CaptureSpec(), unused);
  // Whole rows in one block (and the MLP in one chunk), whole rows in blocks of 4, keys
  // streamed in chunks of 5, the MLP in chunks of 3 positions.
  const auto one_block = model.forward(tokens(), patterns, {}, ForwardOptions{{kT, kT, kT}});
  const auto rows = model.forward(tokens(), patterns, {}, ForwardOptions{{4, 5, kT}});
  const auto streamed = model.forward(tokens(), nothing, {}, ForwardOptions{{4, 5, kT}});
  const auto mlp_chunks = model.forward(tokens(), nothing, {}, ForwardOptions{{kT, kT, 3}});
  expect_close(rows, one_block, "logits with blocks of rows");
  expect_close(streamed, one_block, "logits with streamed keys");
  expect_close(mlp_chunks, one_block, "logits with the MLP in chunks");
}

TEST_P(BlockedAttention, SomeHeadsAndRegionsAreThoseOfTheWholeMap) {
  const SecondLayer layer(GetParam());
  const auto& [config, pe, in, whole] = layer.parts();
  c10::InferenceMode inference;
  BlockRequest all;
  all.scores = all.pattern = all.position = all.cope = all.z = true;
  // One head; two heads of one kv group; two heads across groups (GQA: a split group).
  for (const auto& [h0, n] : {std::pair<int64_t, int64_t>{1, 1}, {0, 2}, {1, 2}, {0, 4}}) {
    const LayerAttention attention(config, pe, in, h0, n);
    const auto b = attention.rows(5, 11, all);
    const std::string what = "heads [" + std::to_string(h0) + ", " + std::to_string(h0 + n) + ")";
    const auto region = [&](const at::Tensor& t) {
      return t.narrow(1, h0, n).narrow(2, 5, 6).narrow(3, b.k_begin, b.k_end - b.k_begin);
    };
    expect_close(b.scores, region(whole.scores), what + " scores");
    expect_close(b.pattern, region(whole.pattern), what + " pattern");
    expect_close(b.z.transpose(1, 2), whole.z.narrow(1, 5, 6).narrow(2, h0, n), what + " z");
    if (pe.has_position_scores()) expect_close(b.position, region(whole.position), what + " position");
    if (pe.has_cope()) expect_close(b.cope_positions, region(whole.cope_positions), what + " CoPE");
    // Keys outside the block are hidden from these rows.
    const auto hidden_scores = whole.scores.narrow(1, h0, n).narrow(2, 5, 6);
    if (b.k_begin > 0) {
      EXPECT_TRUE(hidden_scores.narrow(3, 0, b.k_begin).isneginf().all().item<bool>());
    }
    if (b.k_end < kT) {
      EXPECT_TRUE(hidden_scores.narrow(3, b.k_end, kT - b.k_end).isneginf().all().item<bool>());
    }
  }
}

TEST_P(BlockedAttention, FusedKernelEqualsTheBlockedPath) {
  const auto config = config_of(GetParam());
  const auto model = random_model(config);
  c10::InferenceMode inference;
  Captures unused;
  CaptureSink nothing(CaptureSpec(), unused);
  InputsSink inputs;
  const auto fused = model.forward(tokens(), inputs);             // default sizes: fused where it may
  const auto blocked = model.forward(tokens(), nothing, {}, ForwardOptions{{4, 5, kT}});
  expect_close(fused, blocked, "logits");
  const auto& pe = model.position_encoding();
  const bool covered = fused_attention_enabled() && !pe.needs_whole_rows() && !pe.has_value_term();
  for (const auto& in : inputs.layers) {
    const LayerAttention attention(config, pe, in);
    EXPECT_EQ(attention.fused({}), covered);
    EXPECT_FALSE(attention.fused({3, 5, 0}));  // block sizes set: the blocked path
    expect_close(attention.output({}, {}), attention.output({}, {4, 5, 0}),
                 "z of layer " + std::to_string(in.layer));
  }
}

// Maps wanted at default block sizes: the fused kernel gives z (and, in float32, the lse the
// pattern is exp(scores − lse) of) where it may run, else the blocked path. 600 positions make
// three blocks of the CPU's 256 rows, so later blocks start mid-sequence.
TEST_P(BlockedAttention, MapsAtDefaultSizesEqualWholeAttention) {
  auto config = config_of(GetParam());
  config.n_ctx = 600;  // learned positions for every token
  const auto model = random_model(config);
  c10::InferenceMode inference;
  torch::manual_seed(5);
  const auto ids = torch::randint(0, 30, {1, 600}, torch::kLong);
  InputsSink inputs;
  model.forward(ids, inputs);
  const auto& pe = model.position_encoding();
  const auto& in = inputs.layers[1];
  const LayerAttention attention(config, pe, in);
  ASSERT_LT(attention.block_rows({}), 600);
  BlockRequest maps;
  maps.scores = maps.pattern = maps.position = maps.cope = true;
  std::vector<at::Tensor> scores, patterns;
  int64_t next_row = 0;
  const auto z = attention.output(maps, {}, [&](const AttentionBlock& b) {
    EXPECT_EQ(b.q_begin, next_row);
    next_row = b.q_end;
    // Blocks hold only the keys their rows see: widen to every key for the comparison.
    const auto widen = [&](const at::Tensor& t, double fill) {
      auto all = torch::full({t.size(0), t.size(1), t.size(2), 600}, fill, t.options());
      all.narrow(3, b.k_begin, b.k_end - b.k_begin).copy_(t);
      return all;
    };
    scores.push_back(widen(b.scores, -std::numeric_limits<double>::infinity()));
    patterns.push_back(widen(b.pattern, 0.0));
  });
  EXPECT_EQ(next_row, 600);
  const auto whole = reference::whole_attention(config, pe, in);
  expect_close(torch::cat(scores, 2), whole.scores, "scores");
  expect_close(torch::cat(patterns, 2), whole.pattern, "pattern");
  expect_close(z, whole.z, "z");
}

TEST_P(BlockedAttention, RegionsFromTheRowLogSumExpAreThoseOfTheWholeSoftmax) {
  const SecondLayer layer(GetParam());
  const auto& [config, pe, in, whole] = layer.parts();
  c10::InferenceMode inference;
  const LayerAttention attention(config, pe, in, 1, 2);
  const auto lse = attention.row_lse(5, 11);
  const auto rows = [](const at::Tensor& t) { return t.narrow(1, 1, 2).narrow(2, 5, 6); };
  expect_close(lse, rows(whole.scores).logsumexp(-1), "row log-sum-exp");
  BlockRequest maps;
  maps.scores = maps.pattern = maps.position = maps.cope = true;
  const auto b = attention.region(5, 11, 3, 9, maps, lse);
  ASSERT_GE(b.k_begin, 3);
  ASSERT_LE(b.k_end, 9);
  const auto cut = [&](const at::Tensor& t) { return rows(t).narrow(3, b.k_begin, b.k_end - b.k_begin); };
  expect_close(b.pattern, cut(whole.pattern), "pattern of the region", 1e-6);
  expect_close(b.scores, cut(whole.scores), "scores of the region");
  if (pe.has_position_scores()) expect_close(b.position, cut(whole.position), "position of the region");
  if (pe.has_cope()) expect_close(b.cope_gates, cut(whole.cope_gates), "CoPE gates of the region");
  EXPECT_THROW(attention.region(5, 11, 3, 9, maps, lse.narrow(2, 0, 5)), Error);
  if (config.causal) {  // keys no row sees
    EXPECT_THROW(attention.region(5, 11, 12, 20, maps, lse), Error);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryMethod, BlockedAttention, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// Learned sinks (gpt-oss): one more term exp(sink_h) in every row's normaliser. Whole rows, keys
// streamed in chunks, the row lse, a region from it and a head range all equal the whole
// softmax with the sink as an extra column (reference::whole_attention, HF's eager form); the
// fused kernel is not used (SDPA has no such term).
TEST(BlockedAttention, LearnedSinksInEveryPath) {
  const Case window{"rope_sliding_window", R"([{"type": "rope"}])", true, 2, 6};
  const auto config = config_of(window);
  const auto model = random_model(config);
  const auto& ids = tokens();  // made outside inference mode: the training test reuses them
  c10::InferenceMode inference;
  InputsSink inputs;
  model.forward(ids, inputs);
  auto in = inputs.layers[1];
  torch::manual_seed(11);
  in.sinks = 1.5 * torch::randn({config.n_heads});
  const auto& pe = model.position_encoding();
  const auto whole = reference::whole_attention(config, pe, in);
  // Rows lose the sink's mass: they sum to less than one.
  EXPECT_TRUE((whole.pattern.sum(-1) < 0.999).all().item<bool>());
  const LayerAttention attention(config, pe, in);
  EXPECT_FALSE(attention.fused({}));
  expect_close(attention.output({}, {}), whole.z, "z, default path");
  expect_close(attention.output({}, {4, 5, 0}), whole.z, "z, keys streamed");
  BlockRequest all;
  all.scores = all.pattern = all.z = true;
  const auto b = attention.rows(5, 11, all);
  const auto rows = [&](const at::Tensor& t, int64_t h0, int64_t n) { return t.narrow(1, h0, n).narrow(2, 5, 6); };
  expect_close(b.pattern, rows(whole.pattern, 0, 4).narrow(3, b.k_begin, b.k_end - b.k_begin), "pattern");
  const LayerAttention two_heads(config, pe, in, 1, 2);
  const auto lse = two_heads.row_lse(5, 11);
  const auto sink = in.sinks.narrow(0, 1, 2).view({1, 2, 1}).expand({2, 2, 6});
  expect_close(lse, torch::logaddexp(rows(whole.scores, 1, 2).logsumexp(-1), sink), "row lse with the sink");
  BlockRequest pattern;
  pattern.pattern = true;
  const auto r = two_heads.region(5, 11, 3, 9, pattern, lse);
  expect_close(r.pattern, rows(whole.pattern, 1, 2).narrow(3, r.k_begin, r.k_end - r.k_begin), "region", 1e-6);
  in.sinks = torch::zeros({3});
  EXPECT_THROW(LayerAttention(config, pe, in), Error);
}

TEST(BlockedAttention, TrainingGradientsMatchOneBlock) {
  // The blocked path stays differentiable: the same loss and gradients as one block.
  const auto config = config_of({"cope_rope", R"([{"type": "rope"}, {"type": "cope", "npos_max": 6}])"});
  auto model = random_model(config);
  auto params = named_parameters(config, model.weights());
  const auto grads = [&](const ForwardOptions& blocking, HookSink& sink) {
    for (auto& [n, p] : params) {
      p.set_requires_grad(true);
      if (p.grad().defined()) p.mutable_grad().zero_();
    }
    model.forward(tokens(), sink, {}, blocking).logsumexp(-1).sum().backward();
    std::vector<at::Tensor> out;
    for (auto& [n, p] : params) out.push_back(p.grad().clone());
    return out;
  };
  Captures unused;
  CaptureSink nothing(CaptureSpec(), unused);
  const auto whole = grads({{kT, kT, kT}}, nothing);
  const auto blocked = grads({{4, 5, 3}}, nothing);
  for (size_t i = 0; i < whole.size(); ++i)
    expect_close(blocked[i], whole[i], "gradient of " + params[i].first);
}

TEST(BlockedAttention, BadRowsAndHeadsAreErrors) {
  const auto config = config_of(kCases[3]);
  const auto model = random_model(config);
  c10::InferenceMode inference;
  InputsSink inputs;
  model.forward(tokens(), inputs);
  const auto& pe = model.position_encoding();
  EXPECT_THROW(LayerAttention(config, pe, inputs.layers[0], 3, 2), Error);
  EXPECT_THROW(LayerAttention(config, pe, inputs.layers[0], -1, 1), Error);
  const LayerAttention attention(config, pe, inputs.layers[0]);
  EXPECT_THROW(attention.rows(5, 5, {}), Error);
  EXPECT_THROW(attention.rows(20, kT + 1, {}), Error);
  auto no_v = inputs.layers[0];
  no_v.v = at::Tensor();
  BlockRequest z;
  z.z = true;
  EXPECT_THROW(LayerAttention(config, pe, no_v).rows(0, 4, z), Error);
}

}  // namespace
}  // namespace poslens
