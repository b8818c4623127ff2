// Parity of the BLOOM, MPT, BERT, RoBERTa and nanoGPT checkpoints, TransformerLens state dicts and
// T5 (v1.0, v1.1) in tests/data/models/ against the expected values their own reference code
// produced (HF transformers' modeling_bloom, modeling_mpt, modeling_bert, modeling_roberta,
// modeling_t5; nanoGPT's model.py; TransformerLens; README there has the commands): logits to 1e-4
// and every layer's attention pattern to 1e-5, float32 — with the patterns captured (blocked
// attention) and without any map (LibTorch 2.x: the fused kernel). The families of 2024–26 are
// in test_arch_reference_recent.cpp. On CUDA (suite Gpu, `ctest -L gpu`) the same in float32,
// and bfloat16 logits within bf16's precision.
#include "arch_reference.h"

#include <algorithm>
#include <cmath>

#include "core/base/error.h"
#include "core/position/alibi.h"

namespace poslens {
namespace {

using ::testing::HasSubstr;
using test::case_dir;
using test::expect_parity;
using test::Reference;
namespace fs = std::filesystem;

TEST(ArchReference, BloomWithTransformerPrefixAndTiedHead) {
  expect_parity("bloom", case_dir("bloom"));
  const auto loaded = load_checkpoint(case_dir("bloom").string(), {"cpu", "float32", ""});
  EXPECT_EQ(loaded.model->config().architecture, "BloomForCausalLM");
  EXPECT_THAT(loaded.model->position_encoding().describe(), HasSubstr("ALiBi (6 heads"));
}

TEST(ArchReference, BloomHubLayoutWithoutPrefix) { expect_parity("bloom_noprefix", case_dir("bloom_noprefix")); }

TEST(ArchReference, MptAlibiAndClipQkv) {
  expect_parity("mpt", case_dir("mpt"));
  const auto loaded = load_checkpoint(case_dir("mpt").string(), {"cpu", "float32", ""});
  EXPECT_DOUBLE_EQ(loaded.model->config().clip_qkv, 1.5);
}

TEST(ArchReference, BertMaskedLmWithTokenTypes) {
  expect_parity("bert", case_dir("bert"), /*token_types=*/true);
  const auto loaded = load_checkpoint(case_dir("bert").string(), {"cpu", "float32", ""});
  EXPECT_FALSE(loaded.model->config().causal);
  EXPECT_FALSE(loaded.model->config().predicts_next_token());
}

TEST(ArchReference, RobertaPositionsStartAfterPadding) { expect_parity("roberta", case_dir("roberta")); }

TEST(ArchReference, NanoGptCheckpoint) {
  expect_parity("nanogpt", case_dir("nanogpt") / "ckpt.pt");
  const auto loaded = load_checkpoint((case_dir("nanogpt") / "ckpt.pt").string(), {"cpu", "float32", ""});
  EXPECT_EQ(loaded.model->config().architecture, "nanoGPT");
}

TEST(ArchReference, NanoGptCompiledWithoutBias) {
  expect_parity("nanogpt_compiled", case_dir("nanogpt_compiled") / "ckpt.pt");
  const auto loaded = load_checkpoint((case_dir("nanogpt_compiled") / "ckpt.pt").string(), {"cpu", "float32", ""});
  EXPECT_FALSE(loaded.model->config().qkv_bias);
}

TEST(ArchReference, TransformerLensStateDictWithItsConfig) {
  // TL's own convert_nanogpt_weights layout (W_Q [n_heads, d_model, d_head], ...), with the
  // HookedTransformerConfig as hooked_transformer_config.json; the expected values are nanoGPT's.
  expect_parity("tl_nanogpt", case_dir("tl_nanogpt"));
  expect_parity("tl_nanogpt_compiled", case_dir("tl_nanogpt_compiled"));
  const auto loaded = load_checkpoint(case_dir("tl_nanogpt").string(), {"cpu", "float32", ""});
  EXPECT_EQ(loaded.model->config().architecture, "HookedTransformer");
  EXPECT_EQ(loaded.model->config().format, "TransformerLens");
}

TEST(ArchReference, UnsupportedTransformerLensOptionsAreNamed) {
  const auto dir = test::scratch_dir();
  fs::copy(case_dir("tl_nanogpt"), dir, fs::copy_options::recursive);
  auto config = nlohmann::json::parse(std::ifstream(dir / "hooked_transformer_config.json"));
  config["positional_embedding_type"] = "shortformer";
  std::ofstream(dir / "hooked_transformer_config.json") << config.dump();
  EXPECT_THAT(test::error_of([&] { load_checkpoint(dir.string(), {"cpu", "float32", ""}); }),
              HasSubstr("positional_embedding_type \"shortformer\" is not supported"));
}

/// T5: the encoder's, the decoder's and the cross-attention's patterns under TL's
/// HookedEncoderDecoder names, and the decoder's logits.
void expect_t5_parity(const std::string& name) {
  const Reference ref(name);
  const auto loaded = load_checkpoint(case_dir(name).string(), {"cpu", "float32", ""});
  const auto& model = *loaded.model;
  Captures captures;
  CaptureSink sink(CaptureSpec::default_spec(model.hook_points()), captures);
  ForwardOptions options;
  options.decoder_tokens = ref.ids("decoder_input_ids");
  c10::InferenceMode guard;
  const auto logits = model.forward(ref.ids(), sink, {}, options).cpu();
  EXPECT_TRUE(torch::allclose(logits, ref["logits"], 0, 1e-4))
      << name << ": logits differ by " << (logits - ref["logits"]).abs().max().item<float>();
  Captures none;
  CaptureSink nothing(CaptureSpec(), none);
  const auto fused = model.forward(ref.ids(), nothing, {}, options).cpu();
  EXPECT_TRUE(torch::allclose(fused, ref["logits"], 0, 1e-4))
      << name << ": logits without maps differ by " << (fused - ref["logits"]).abs().max().item<float>();
  const std::vector<std::pair<HookStack, std::string>> stacks{
      {HookStack::Encoder, "encoder_attentions."}, {HookStack::Decoder, "decoder_attentions."},
      {HookStack::Cross, "cross_attentions."}};
  for (const auto& [stack, key] : stacks)
    for (int l = 0; l < 2; ++l) {
      const HookPoint point{HookKind::Pattern, l, stack};
      const auto pattern = captures.find(point);
      ASSERT_TRUE(pattern.defined()) << point.name();
      const auto expected = ref[key + std::to_string(l)];
      EXPECT_TRUE(torch::allclose(pattern, expected, 0, 1e-5))
          << name << " " << point.name() << ": differs by " << (pattern - expected).abs().max().item<float>();
    }
}

TEST(ArchReference, T5EncoderDecoderReluTied) { expect_t5_parity("t5"); }
TEST(ArchReference, T5v11GatedGeluUntied) { expect_t5_parity("t5_v1_1"); }

TEST(ArchReference, T5HookNamesFollowHookedEncoderDecoder) {
  const auto loaded = load_checkpoint(case_dir("t5").string(), {"cpu", "float32", ""});
  std::vector<std::string> names;
  for (const auto& p : loaded.model->hook_points()) names.push_back(p.name());
  for (const char* expected : {"encoder.hook_embed", "encoder.0.attn.hook_pattern", "encoder.1.hook_resid_post",
                               "encoder.ln_final.hook_normalized", "decoder.0.attn.hook_pos_scores",
                               "decoder.1.cross_attn.hook_pattern", "decoder.1.hook_cross_attn_out",
                               "decoder.0.hook_resid_mid_cross", "decoder.ln_final.hook_normalized", "logits"}) {
    EXPECT_THAT(names, ::testing::Contains(std::string(expected)));
    const auto parsed = HookPoint::parse(expected);
    ASSERT_TRUE(parsed.has_value()) << expected;
    EXPECT_EQ(parsed->name(), expected);
  }
  // Without decoder tokens the decoder starts from decoder_start_token_id (one position).
  Captures none;
  CaptureSink nothing(CaptureSpec(), none);
  c10::InferenceMode guard;
  EXPECT_EQ(loaded.model->forward(torch::tensor({{5, 6, 7}}), nothing).sizes(), (std::vector<int64_t>{1, 1, 96}));
}

TEST(ArchReference, T5ConfigClaimingMoreEncoderLayersThanStoredFailsOnTheFile) {
  const auto dir = test::scratch_dir();
  fs::copy(case_dir("t5"), dir, fs::copy_options::recursive);
  auto config = nlohmann::json::parse(std::ifstream(dir / "config.json"));
  config["num_layers"] = 1000000000;  // a hostile config must not make a billion layers
  config["num_decoder_layers"] = 2;
  std::ofstream(dir / "config.json") << config.dump();
  EXPECT_THAT(test::error_of([&] { load_checkpoint(dir.string(), {"cpu", "float32", ""}); }),
              HasSubstr("missing tensor encoder.block.999999999.layer.0.SelfAttention.q.weight"));
}

TEST(ArchReference, AlibiSlopesOfBothRecipes) {
  // BLOOM's (Press et al.) and MPT's agree at alibi_bias_max 8 for any head count; MPT's
  // odd-then-even order shows with another bias_max (llm-foundry gen_slopes, by hand).
  const auto h6 = std::vector<double>{0.25, 1.0 / 16, 1.0 / 64, 1.0 / 256, 0.5, 0.125};
  EXPECT_EQ(alibi_slopes(6), h6);
  EXPECT_EQ(alibi_slopes_mpt(6, 8.0), h6);
  const auto mpt = alibi_slopes_mpt(3, 4.0);  // P = 4: m_k = 2^-k -> odd-indexed (2^-2, 2^-4), then 2^-1
  EXPECT_EQ(mpt, (std::vector<double>{0.25, 1.0 / 16, 0.5}));
}

TEST(ArchReference, TokenTypesAreCheckedAndOnlyForModelsThatHaveThem) {
  const auto bert = load_checkpoint(case_dir("bert").string(), {"cpu", "float32", ""});
  ForwardOptions options;
  options.token_type_ids = torch::full({1, 3}, 2, torch::kLong);  // type_vocab_size is 2
  Captures unused;
  CaptureSink none(CaptureSpec(), unused);
  EXPECT_THAT(test::error_of([&] { bert.model->forward(torch::zeros({1, 3}, torch::kLong), none, {}, options); }),
              HasSubstr("token type ids must lie in [0, 2)"));
  const auto bloom = load_checkpoint(case_dir("bloom").string(), {"cpu", "float32", ""});
  options.token_type_ids = torch::zeros({1, 3}, torch::kLong);
  EXPECT_THAT(test::error_of([&] { bloom.model->forward(torch::zeros({1, 3}, torch::kLong), none, {}, options); }),
              HasSubstr("has no token-type embeddings"));
}

/// bfloat16 on CUDA: logits within 3 % (relative norm) of the float32 reference, as bf16's
/// 8-bit mantissa allows through a few layers.
void expect_bf16_close(const std::string& name, const fs::path& path, bool token_types = false) {
  const Reference ref(name);
  const auto loaded = load_checkpoint(path.string(), {"cuda", "bfloat16", ""});
  Captures none;
  CaptureSink nothing(CaptureSpec(), none);
  ForwardOptions options;
  if (token_types) options.token_type_ids = ref.ids("token_type_ids");
  c10::InferenceMode guard;
  const auto logits = loaded.model->forward(ref.ids(), nothing, {}, options).cpu().to(torch::kDouble);
  const auto expected = ref["logits"].to(torch::kDouble);
  EXPECT_LT(((logits - expected).norm() / expected.norm()).item<double>(), 0.03) << name << " in bfloat16";
}

TEST(Gpu, ArchitectureParityOnCuda) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device in this LibTorch build";
  for (const char* name : {"bloom", "mpt", "roberta", "tl_nanogpt"}) {
    expect_parity(name, case_dir(name), false, "cuda");
    expect_bf16_close(name, case_dir(name));
  }
  expect_parity("bert", case_dir("bert"), true, "cuda");
  expect_bf16_close("bert", case_dir("bert"), true);
  expect_parity("nanogpt", case_dir("nanogpt") / "ckpt.pt", false, "cuda");
}

}  // namespace
}  // namespace poslens
