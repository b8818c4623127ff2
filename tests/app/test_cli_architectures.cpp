// poslens-cli on the new architectures' reference checkpoints (tests/data/models/): T5's three
// stacks in one HDF5 file, the masked LM's predictions, and the analyses that are not
// stack-aware refusing an encoder–decoder model with a message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include <H5Cpp.h>

#include "app/cli_runner.h"
#include "fixtures.h"

namespace poslens {
namespace {

using ::testing::HasSubstr;
using test::cli;
using test::q;
using test::cli_with_figure;
using test::kCliDrawsFigures;

std::string model(const std::string& name) {
  return q(std::filesystem::path(POSLENS_SOURCE_DIR) / "tests/data/models" / name);
}

TEST(CliArchitectures, T5RunWritesEveryStackWithItsShape) {
  REQUIRE_CLI();
  const auto out = test::scratch_dir() / "t5.h5";
  const auto r = cli("run " + model("t5") + " --tokens 5,6,7,8,9 --out " + q(out));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("next token:"));
  H5::H5File file(out.string(), H5F_ACC_RDONLY);
  const auto dims = [&](const std::string& name) {
    const auto space = file.openDataSet("/captures/" + name).getSpace();
    std::vector<hsize_t> d(static_cast<size_t>(space.getSimpleExtentNdims()));
    space.getSimpleExtentDims(d.data());
    return d;
  };
  EXPECT_EQ(dims("encoder.1.attn.hook_pattern"), (std::vector<hsize_t>{1, 4, 5, 5}));
  EXPECT_EQ(dims("decoder.1.attn.hook_pattern"), (std::vector<hsize_t>{1, 4, 1, 1}));
  EXPECT_EQ(dims("decoder.1.cross_attn.hook_pattern"), (std::vector<hsize_t>{1, 4, 1, 5}));
  EXPECT_EQ(dims("logits"), (std::vector<hsize_t>{1, 1, 96}));
}

TEST(CliArchitectures, T5PooledMapsHaveEachStacksOwnStride) {
  REQUIRE_CLI();
  const auto out = test::scratch_dir() / "t5pool.h5";
  std::string ids = "5";
  for (int i = 1; i < 40; ++i) ids += "," + std::to_string(5 + i % 80);
  const auto r = cli("run " + model("t5") + " --tokens " + ids + " --pool 8 --out " + q(out));
  ASSERT_EQ(r.code, 0) << r.output;
  H5::H5File file(out.string(), H5F_ACC_RDONLY);
  const auto encoder = file.openDataSet("/captures/encoder.0.attn.hook_pattern");
  std::vector<hsize_t> d(4);
  encoder.getSpace().getSimpleExtentDims(d.data());
  EXPECT_EQ(d, (std::vector<hsize_t>{1, 4, 8, 8})) << "40 encoder positions pooled by 5";
  int64_t stride = 0;
  encoder.openAttribute("pool_stride").read(H5::PredType::NATIVE_INT64, &stride);
  EXPECT_EQ(stride, 5);
  file.openDataSet("/captures/decoder.0.cross_attn.hook_pattern").getSpace().getSimpleExtentDims(d.data());
  EXPECT_EQ(d, (std::vector<hsize_t>{1, 4, 1, 8})) << "1 decoder query over 40 encoder keys by 5";
}

TEST(CliArchitectures, DecoderTextIsOnlyForEncoderDecoderModels) {
  REQUIRE_CLI();
  const auto r = cli("run " + model("bloom") + " --tokens 5,6 --decoder-text x --out " +
                     q(test::scratch_dir() / "x.h5"));
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.output, HasSubstr("--decoder-text is for encoder–decoder models"));
}

TEST(CliArchitectures, MaskedLmPrintsEveryPositionWithoutAMaskToken) {
  REQUIRE_CLI();
  const auto r = cli("run " + model("bert") + " --tokens 5,6,7 --top-k 2 --out " + q(test::scratch_dir() / "b.h5"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("position 0 (\"#5\"):"));
  EXPECT_THAT(r.output, HasSubstr("position 2 (\"#7\"):"));
  const auto g = cli("generate " + model("bert") + " --text hi");
  EXPECT_EQ(g.code, 1);
  EXPECT_THAT(g.output, HasSubstr("generate needs a causal language model"));
}

// The 2024–26 families run through the analyses that read q and k from the weights (the probe
// and frequency usage use Transformer::qk_projections, which applies the q/k norm).
TEST(CliArchitectures, QkNormModelsRunTheRotaryAnalyses) {
  REQUIRE_CLI();
  for (const char* name : {"qwen3", "olmo2"}) {
    const auto out = test::scratch_dir() / (std::string(name) + "-probe.h5");
    auto r = cli("probe " + model(name) + " --length 16 --samples 4 --out " + q(out));
    ASSERT_EQ(r.code, 0) << name << ": " << r.output;
    r = cli("frequency-usage " + model(name) + " --tokens 5,6,7,8,9 --out " + q(test::scratch_dir() / "u.csv"));
    ASSERT_EQ(r.code, 0) << name << ": " << r.output;
  }
}

// Writing them as LlamaForCausalLM would drop their q/k norm (and OLMo 2's norm placement).
TEST(CliArchitectures, ConvertRefusesModelsLlamaCannotHold) {
  REQUIRE_CLI();
  for (const char* name : {"qwen3", "olmo2", "smollm3"}) {  // q/k norms, norm placement, NoPE layers
    const auto out = test::scratch_dir() / (std::string(name) + "-as-llama");
    const auto r = cli("convert " + model(name) + " --out " + q(out));
    EXPECT_EQ(r.code, 1) << name << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr("pre-norm, no q/k norm) can be written as LlamaForCausalLM"));
    EXPECT_FALSE(std::filesystem::exists(out)) << name;
  }
}

TEST(CliArchitectures, OneStackAnalysesRefuseEncoderDecoderModels) {
  REQUIRE_CLI();
  const auto r = cli("heads " + model("t5") + " --tokens 5,6,7 --out " + q(test::scratch_dir() / "h.h5"));
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.output, HasSubstr("Head metrics reads one stack of layers"));
}

TEST(CliArchitectures, InfoNamesEachFamily) {
  REQUIRE_CLI();
  for (const auto& [name, expected] : std::vector<std::pair<std::string, std::string>>{
           {"bloom", "BloomForCausalLM"}, {"mpt", "MptForCausalLM"}, {"bert", "BertForMaskedLM"},
           {"roberta", "RobertaForMaskedLM"}, {"t5", "T5ForConditionalGeneration"},
           {"nanogpt/ckpt.pt", "nanoGPT"}, {"tl_nanogpt", "HookedTransformer"},
           {"qwen3", "q/k RMSNorm per head"}, {"olmo2", "norms on the sublayer outputs"},
           {"gemma3", "local 4: 0-4; global: 5"}, {"smollm3", "global: 0-2; NoPE: 3"},
           {"gemma2", "soft-capped"}, {"cohere2", "local 4: 0-2; NoPE: 3"},
           {"gpt_oss", "a learned attention sink per head"}, {"gpt_oss", "4 experts, top 2"},
           {"qwen3_sliding", "global: 0-1; local 4: 2-3"}, {"modernbert", "global: 0, 3; local ±2: 1-2"},
           {"phi3_long", "Phi3ForCausalLM"}, {"phi3_long", "sliding window 10"}, {"phi3", "longrope"},
           {"llama4_maverick", "a shared expert) on 2 of 4 layers, a dense gated MLP on the others"},
           {"gpt_oss_mxfp4", "(U8: MXFP4 experts, dequantised)"},
           {"deepseek_v3", "multi-head latent attention (kv_lora_rank 10, q_lora_rank 12)"},
           {"deepseek_v2", "14 (8 rotary + 6 no-position channels, decoupled RoPE; values 5)"}}) {
    const auto r = cli("info " + model(name));
    ASSERT_EQ(r.code, 0) << name << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr(expected));
  }
}

// `info --json` lists each layer's type and scheme (what scripts read to group layers).
TEST(CliArchitectures, InfoJsonListsTheLayerTypes) {
  REQUIRE_CLI();
  const auto r = cli("info " + model("cohere2") + " --json");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(R"("layer_types":["local 4","local 4","local 4","NoPE"])"));
  EXPECT_THAT(r.output, HasSubstr(R"("sliding_window":0,"position_encoding":[]})"));
}

// gpt-oss: `heads` reports each head's learned-sink share (the learned_sink column, between 0
// and 1, nonzero), `info --json` the sinks and the experts.
TEST(CliArchitectures, HeadsReportTheLearnedSinkShareOfGptOss) {
  REQUIRE_CLI();
  const auto csv = test::scratch_dir() / "gpt_oss_heads.csv";
  const auto r = cli("heads " + model("gpt_oss") + " --tokens 5,6,7,8,9,10,11,12,13,14 --induction-length 0 --out " + q(csv));
  ASSERT_EQ(r.code, 0) << r.output;
  std::ifstream in(csv);
  std::string header, row;
  std::getline(in, header);
  EXPECT_THAT(header, ::testing::EndsWith(",position_share,learned_sink"));
  int rows = 0;
  while (std::getline(in, row)) {
    const double share = std::stod(row.substr(row.rfind(',') + 1));
    EXPECT_GT(share, 0.0) << row;
    EXPECT_LT(share, 1.0) << row;
    ++rows;
  }
  EXPECT_EQ(rows, 16);
  const auto info = cli("info " + model("gpt_oss") + " --json");
  ASSERT_EQ(info.code, 0) << info.output;
  EXPECT_THAT(info.output, HasSubstr(R"("attention_sinks":true,"n_experts":4,"n_experts_per_token":2)"));
  EXPECT_THAT(info.output, HasSubstr(R"("mlp":"moe")"));
}

// gpt-oss: `position-map` writes each row's learned-sink share beside the maps (pooled like
// them) and draws it as a column between them.
TEST(CliArchitectures, PositionMapWritesTheLearnedSinkColumnOfGptOss) {
  REQUIRE_CLI();
  const auto out = test::scratch_dir() / "gpt_oss_pm.h5", figure = test::scratch_dir() / "gpt_oss_pm.png";
  const auto r = cli_with_figure("position-map " + model("gpt_oss") +
                                     " --tokens 5,6,7,8,9,10,11,12,13,14,15,16,17 --probe-samples 4 --heads 1.2 "
                                     "--pool 4 --layer 1 --head 2 --out " + q(out),
                                 figure, out);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("the learned sink's share of each row written (/analysis/sink_share)"));
  H5::H5File file(out.string(), H5F_ACC_RDONLY);
  const auto sink = file.openDataSet("/analysis/sink_share");
  std::vector<hsize_t> d(3);
  ASSERT_EQ(sink.getSpace().getSimpleExtentNdims(), 3);
  sink.getSpace().getSimpleExtentDims(d.data());
  EXPECT_EQ(d, (std::vector<hsize_t>{4, 4, 4})) << "[layer, head, q_block]: 13 rows pooled by 4";
  std::vector<float> values(64);
  sink.read(values.data(), H5::PredType::NATIVE_FLOAT);
  for (int b = 0; b < 4; ++b) {
    const float share = values[static_cast<size_t>((1 * 4 + 2) * 4 + b)];
    EXPECT_GT(share, 0.0f) << "head 1.2, block " << b;
    EXPECT_LT(share, 1.0f) << "head 1.2, block " << b;
  }
  if (kCliDrawsFigures) EXPECT_GT(std::filesystem::file_size(figure), 1000u);
}

}  // namespace
}  // namespace poslens
