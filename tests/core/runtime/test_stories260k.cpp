// End-to-end checks on the real trained stories260K (llama2.c) model from ../shared/fixtures.
#include <torch/torch.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "core/runtime/checkpoint.h"
#include "core/base/error.h"
#include "core/models/hf_writer.h"
#include "core/runtime/attention.h"
#include "core/runtime/model_input.h"
#include "core/runtime/run.h"
#include "core/runtime/sinks.h"
#include "fixtures.h"
#include "reference_llama.h"

namespace poslens {
namespace {

std::string model_path() { return (test::stories_dir() / "stories260K.bin").string(); }

/// Reads stories260K.bin with std::ifstream following run.c's memory_map_weights, without any
/// PosLens reader, into the independent reference implementation.
test::ReferenceLlama read_reference() {
  std::ifstream in(model_path(), std::ios::binary);
  int32_t h[7];
  in.read(reinterpret_cast<char*>(h), sizeof h);
  test::ReferenceLlama r;
  r.dim = h[0], r.hidden = h[1], r.n_layers = h[2], r.n_heads = h[3], r.n_kv_heads = h[4];
  r.vocab = std::abs(h[5]);
  const int seq_len = h[6], hs = r.dim / r.n_heads, kv_dim = hs * r.n_kv_heads;
  auto read = [&](size_t n) {
    std::vector<float> v(n);
    in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * sizeof(float)));
    return v;
  };
  auto per_layer = [&](std::vector<std::vector<float>>& dst, size_t n) {
    for (int l = 0; l < r.n_layers; ++l) dst.push_back(read(n));
  };
  const size_t d = r.dim, hid = r.hidden;
  r.embedding = read(r.vocab * d);
  per_layer(r.rms_att, d);
  per_layer(r.wq, d * d);
  per_layer(r.wk, kv_dim * d);
  per_layer(r.wv, kv_dim * d);
  per_layer(r.wo, d * d);
  per_layer(r.rms_ffn, d);
  per_layer(r.w1, hid * d);
  per_layer(r.w2, d * hid);
  per_layer(r.w3, hid * d);
  r.rms_final = read(d);
  read(static_cast<size_t>(seq_len) * hs);  // freq_cis_real + freq_cis_imag, unused
  r.classifier = h[5] > 0 ? r.embedding : read(r.vocab * d);
  EXPECT_TRUE(in.good());
  return r;
}

double max_abs_diff(const at::Tensor& logits, const std::vector<std::vector<double>>& ref) {
  double worst = 0;
  const auto cpu = logits.to(torch::kCPU, torch::kDouble);
  for (size_t p = 0; p < ref.size(); ++p)
    for (size_t v = 0; v < ref[p].size(); ++v)
      worst = std::max(worst, std::abs(cpu[0][static_cast<int64_t>(p)][static_cast<int64_t>(v)]
                                            .item<double>() - ref[p][v]));
  return worst;
}

TEST(Stories260K, LogitsOfOnceUponATimeMatchIndependentReference) {
  POSLENS_REQUIRE_STORIES();
  const auto model = load_checkpoint(model_path(), {"cpu", "float32", ""});
  ASSERT_NE(model.tokenizer, nullptr);
  const auto ids = encode_text(model, "Once upon a time");
  ASSERT_EQ(ids.front(), 1) << "BOS first for Llama-style models";
  ASSERT_GT(ids.size(), 3u);

  const auto result = run_model(model, ids, CaptureSpec::default_spec());
  const auto ref = read_reference().forward(ids);
  EXPECT_LT(max_abs_diff(result.logits, ref), 1e-4);
  EXPECT_EQ(result.logits.sizes(), (std::vector<int64_t>{1, static_cast<int64_t>(ids.size()), 512}));
}

TEST(Stories260K, GreedyDecodingFromBosTellsTheStory) {
  POSLENS_REQUIRE_STORIES();
  const auto model = load_checkpoint(model_path(), {"cpu", "float32", ""});
  std::vector<int64_t> ids{model.tokenizer->bos_id()};
  for (int step = 0; step < 30; ++step) {
    const auto logits = model.model->forward(torch::tensor(ids).unsqueeze(0));
    ids.push_back(logits[0][static_cast<int64_t>(ids.size()) - 1].argmax().item<int64_t>());
  }
  EXPECT_THAT(model.tokenizer->decode(ids),
              ::testing::StartsWith("Once upon a time, there was a little girl named Lily."));
}

TEST(Stories260K, ConvertedHuggingFaceFolderGivesTheSameLogits) {
  POSLENS_REQUIRE_STORIES();
  const auto original = load_checkpoint(model_path(), {"cpu", "float32", ""});
  const auto dir = test::scratch_dir() / "stories260K-hf";
  write_hf_llama(dir.string(), original.model->config(), original.model->weights());
  const auto converted = load_checkpoint(dir.string(), {"cpu", "float32", ""});
  EXPECT_EQ(converted.model->config().architecture, "LlamaForCausalLM");
  EXPECT_EQ(converted.model->position_encoding().rotary_info()->pairing, RopePairing::HalfSplit);
  EXPECT_EQ(converted.n_params, original.n_params);

  const auto ids = encode_text(original, "Once upon a time");
  const auto tokens = torch::tensor(ids).unsqueeze(0);
  const auto a = original.model->forward(tokens), b = converted.model->forward(tokens);
  // Relative to the logits' scale (~10): float32 products summed in another order (the
  // permuted q/k, block sizes of POSLENS_ATTENTION_BLOCKS) differ by a few ulps.
  EXPECT_LT((a - b).abs().max().item<double>(), 2e-6 * a.abs().max().item<double>());
  EXPECT_THROW(write_hf_llama(dir.string(), original.model->config(), original.model->weights()), Error) << "existing folder";
}

TEST(Stories260K, CapturesHaveTheSpecShapesAndGqaHeadMapping) {
  POSLENS_REQUIRE_STORIES();
  const auto model = load_checkpoint(model_path(), {"cpu", "float32", ""});
  const auto ids = encode_text(model, "Lily saw a big dog.");
  const int64_t T = static_cast<int64_t>(ids.size());
  const auto run = run_model(model, ids, CaptureSpec::all());
  auto get = [&](HookKind kind, int layer) { return run.captures.find({kind, layer}); };
  using Shape = std::vector<int64_t>;
  EXPECT_EQ(get(HookKind::Embed, -1).sizes(), (Shape{1, T, 64}));
  EXPECT_EQ(get(HookKind::ResidPost, 4).sizes(), (Shape{1, T, 64}));
  EXPECT_EQ(get(HookKind::Q, 2).sizes(), (Shape{1, T, 8, 8}));
  EXPECT_EQ(get(HookKind::K, 2).sizes(), (Shape{1, T, 4, 8}));
  EXPECT_EQ(get(HookKind::RotK, 2).sizes(), (Shape{1, T, 4, 8}));
  EXPECT_EQ(get(HookKind::Pattern, 2).sizes(), (Shape{1, 8, T, T}));
  EXPECT_EQ(get(HookKind::Z, 2).sizes(), (Shape{1, T, 8, 8}));
  EXPECT_EQ(get(HookKind::Logits, -1).sizes(), (Shape{1, T, 512}));
  EXPECT_FALSE(get(HookKind::PosEmbed, -1).defined()) << "RoPE model has no hook_pos_embed";

  // GQA: query head h attends with kv head h / (n_heads / n_kv_heads) = h / 2.
  const auto rq = get(HookKind::RotQ, 2)[0], rk = get(HookKind::RotK, 2)[0];
  const auto scores = get(HookKind::AttnScores, 2)[0];
  for (int64_t h = 0; h < 8; ++h) {
    const auto expected = torch::matmul(rq.select(1, h), rk.select(1, h / 2).t()) / std::sqrt(8.0);
    const auto lower = torch::ones({T, T}, torch::kBool).tril();
    EXPECT_TRUE(torch::allclose(scores[h].masked_select(lower), expected.masked_select(lower),
                                1e-5, 1e-5)) << "head " << h;
    EXPECT_TRUE(torch::isinf(scores[h].masked_select(lower.logical_not())).all().item<bool>());
  }
  const auto rows = get(HookKind::Pattern, 0).sum(-1);
  EXPECT_TRUE(torch::allclose(rows, torch::ones_like(rows), 1e-5, 1e-5));
}

TEST(Stories260K, BfloatSixteenRunsAndStaysClose) {
  POSLENS_REQUIRE_STORIES();
  const auto f32 = load_checkpoint(model_path(), {"cpu", "float32", ""});
  const auto bf16 = load_checkpoint(model_path(), {"cpu", "bfloat16", ""});
  EXPECT_EQ(bf16.model->dtype(), torch::kBFloat16);
  const auto tokens = torch::tensor(encode_text(f32, "Once upon a time")).unsqueeze(0);
  const auto a = f32.model->forward(tokens), b = bf16.model->forward(tokens);
  EXPECT_EQ(b.scalar_type(), torch::kFloat32) << "logits are float32 whatever the compute dtype";
  EXPECT_LT((a - b).abs().max().item<double>(), 0.5);
  EXPECT_EQ(a[0][-1].argmax().item<int64_t>(), b[0][-1].argmax().item<int64_t>());
}

}  // namespace
}  // namespace poslens

namespace poslens {
namespace {

// Runs where LibTorch has CUDA (e.g. PyTorch's CUDA LibTorch on a GPU machine); skips here.
TEST(Stories260K, LoadReportsProgressPerTensorAndCanBeCancelled) {
  POSLENS_REQUIRE_STORIES();
  // 1 embedding + 5 layers x 9 tensors + the final norm; the classifier is shared.
  LoadOptions options{"cpu", "float32", ""};
  std::vector<std::pair<int64_t, int64_t>> calls;
  options.progress = [&](int64_t done, int64_t total) {
    calls.emplace_back(done, total);
    return true;
  };
  load_checkpoint(model_path(), options);
  ASSERT_EQ(calls.size(), 47u);
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(calls[i].first, static_cast<int64_t>(i));
    EXPECT_EQ(calls[i].second, 48) << "total counts the optional output.weight rule too";
  }
  int seen = 0;
  options.progress = [&](int64_t, int64_t) { return ++seen < 10; };
  EXPECT_THROW(load_checkpoint(model_path(), options), Cancelled);
  EXPECT_EQ(seen, 10) << "stops at the first false";
}

TEST(Gpu, Stories260KOnCudaMatchesCpu) {
  POSLENS_REQUIRE_STORIES();
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device in this LibTorch build";
  const auto cpu = load_checkpoint(model_path(), {"cpu", "float32", ""});
  const auto gpu = load_checkpoint(model_path(), {"cuda", "float32", ""});
  EXPECT_TRUE(gpu.model->device().is_cuda());
  const auto ids = encode_text(cpu, "Once upon a time");
  const auto a = run_model(cpu, ids, CaptureSpec::default_spec());
  const auto b = run_model(gpu, ids, CaptureSpec::default_spec());
  EXPECT_LT((a.logits - b.logits.cpu()).abs().max().item<double>(), 1e-4);
  const auto pattern = b.captures.find({HookKind::Pattern, 4});
  EXPECT_TRUE(pattern.device().is_cpu()) << "captures are published on the CPU";
}

TEST(Gpu, FusedAttentionAndRowLogSumExpOnCuda) {
  // The fused kernel's output (z of every layer) and row log-sum-exp on CUDA against the
  // blocked path on the same device; a region of a map from the lse against whole rows.
  POSLENS_REQUIRE_STORIES();
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device in this LibTorch build";
  const auto gpu = load_checkpoint(model_path(), {"cuda", "float32", ""});
  const auto& cfg = gpu.model->config();
  std::vector<LayerAttentionInputs> layers;
  AttentionInputsSink inputs(layers, cfg.n_layers, /*keep_values=*/true);
  c10::InferenceMode inference;
  torch::manual_seed(5);
  gpu.model->forward(torch::randint(1, 512, {1, 700}, torch::kLong), inputs);
  ASSERT_EQ(layers.size(), static_cast<size_t>(cfg.n_layers));
  const auto& pe = gpu.model->position_encoding();
  for (const auto& in : layers) {
    const LayerAttention attention(cfg, pe, in);
    if (!fused_attention_enabled()) GTEST_SKIP() << "this LibTorch has no fused attention";
    ASSERT_TRUE(attention.fused({}));
    const auto fused = attention.output({}, {}), blocked = attention.output({}, {64, 96, 0});
    EXPECT_LT((fused - blocked).abs().max().item<double>(), 1e-5) << "z of layer " << in.layer;
    BlockRequest maps;
    maps.scores = maps.pattern = true;
    const auto whole = attention.rows(300, 420, maps);
    const auto lse = attention.row_lse(300, 420);
    EXPECT_LT((lse - whole.scores.logsumexp(-1)).abs().max().item<double>(), 1e-5) << "lse of layer " << in.layer;
    const auto region = attention.region(300, 420, 100, 350, maps, lse);
    EXPECT_LT((region.pattern - whole.pattern.narrow(-1, 100, 250)).abs().max().item<double>(), 1e-6)
        << "region of layer " << in.layer;
  }
}

}  // namespace
}  // namespace poslens
