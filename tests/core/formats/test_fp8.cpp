// FP8 weights (core/formats/fp8.h, core/formats/quantization_config.h): DeepSeek-V3's blocks (HF
// quant_method "fp8") and compressed-tensors' per-tensor / per-channel / group / block scales —
// hand-computed E4M3 codes, partial edge blocks, leading dimensions, which way round a block lies,
// the load dtype, the source that presents each weight + its scale as one tensor, and what
// quantization_config PosLens reads or refuses. HF's own dequantisation of whole models, and
// PyTorch's float8_e4m3fn values of all 256 codes, are the references of
// ArchReference.DeepseekV3Fp8BlockQuantisedRelease and ArchReference.Qwen3Fp8CompressedTensors.
#include <torch/torch.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "core/formats/fp8.h"
#include "core/formats/memory_tensors.h"
#include "core/formats/quantization_config.h"
#include "fixtures.h"

namespace poslens {
namespace {

using ::testing::HasSubstr;

/// quant_method "fp8" with weight_block_size [rows, cols].
Fp8Scaling blocks(int64_t rows, int64_t cols) {
  Fp8Scaling s;
  s.strategies = {{Fp8Strategy::Kind::Block, {rows, cols}}};
  return s;
}

at::Tensor codes(std::vector<int> bytes, std::vector<int64_t> shape) {
  return torch::tensor(std::vector<int64_t>(bytes.begin(), bytes.end())).to(torch::kByte).view(shape);
}

// OCP FP8 v1.0, E4M3: S.EEEE.MMM, bias 7, subnormals m·2^-9, no infinities, S.1111.111 NaN.
TEST(Fp8, CodesDecodeAsE4M3) {
  const auto v = e4m3_values();
  ASSERT_EQ(v.sizes(), (std::vector<int64_t>{256}));
  EXPECT_EQ(v[0x00].item<float>(), 0.0f);
  EXPECT_EQ(v[0x01].item<float>(), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_EQ(v[0x07].item<float>(), 7 * std::ldexp(1.0f, -9));
  EXPECT_EQ(v[0x08].item<float>(), std::ldexp(1.0f, -6));  // smallest normal
  EXPECT_EQ(v[0x38].item<float>(), 1.0f);
  EXPECT_EQ(v[0x3C].item<float>(), 1.5f);
  EXPECT_EQ(v[0x7E].item<float>(), 448.0f);  // largest
  EXPECT_TRUE(std::isnan(v[0x7F].item<float>()));
  EXPECT_TRUE(std::isnan(v[0xFF].item<float>()));
  EXPECT_TRUE(std::signbit(v[0x80].item<float>()));
  EXPECT_EQ(v[0xC0].item<float>(), -2.0f);
  EXPECT_EQ(v.isnan().sum().item<int64_t>(), 2);
}

// A 3×5 weight in blocks of 2×2: scales [2, 3]; the last row block and column block partial.
TEST(Fp8, DequantisesPartialEdgeBlocks) {
  auto c = torch::full({3, 5}, 0x38, torch::kByte);  // 1.0 everywhere
  c[2][4] = 0xC0;                                      // -2.0
  const auto scale = torch::tensor({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}).view({2, 3});
  const auto w = dequantize_fp8_blocks(c, scale, {2, 2}, "w");
  ASSERT_EQ(w.sizes(), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(w.scalar_type(), torch::kFloat);
  const auto expected = torch::tensor({1.0f, 1.0f, 2.0f, 2.0f, 3.0f,  //
                                       1.0f, 1.0f, 2.0f, 2.0f, 3.0f,  //
                                       4.0f, 4.0f, 5.0f, 5.0f, -12.0f})
                            .view({3, 5});
  EXPECT_TRUE(w.equal(expected)) << w;
  // Blocks 1 row by 4 columns: the row index picks the scale's row, the column / 4 its column.
  const auto tall = torch::tensor({1.0f, 10.0f, 2.0f, 20.0f, 3.0f, 30.0f}).view({3, 2});
  const auto v = dequantize_fp8_blocks(torch::full({3, 5}, 0x38, torch::kByte), tall, {1, 4}, "v");
  EXPECT_TRUE(v.equal(torch::tensor({1.0f, 1.0f, 1.0f, 1.0f, 10.0f, 2.0f, 2.0f, 2.0f, 2.0f, 20.0f, 3.0f, 3.0f, 3.0f, 3.0f, 30.0f}).view({3, 5}))) << v;
  // Leading dimensions (fused experts [E, R, C]) carry their own scales.
  const auto stacked = torch::stack({c, c});
  const auto scales = torch::stack({scale, 10 * scale});
  const auto both = dequantize_fp8_blocks(stacked, scales, {2, 2}, "e");
  EXPECT_TRUE(both[0].equal(expected));
  EXPECT_TRUE(both[1].equal(10 * expected));
  // Straight to bfloat16 / float16: float32's values converted, no float32 weight made first.
  const auto odd = torch::tensor({1.0f + 1.0f / 1024, 3.0f / 7, 5.0f / 3, 7.0f / 9, 0.1f, 0.3f}).view({2, 3});
  for (const auto dtype : {torch::kBFloat16, torch::kHalf}) {
    const auto direct = dequantize_fp8_blocks(c, odd, {2, 2}, "w", dtype);
    EXPECT_EQ(direct.scalar_type(), dtype);
    EXPECT_TRUE(direct.equal(dequantize_fp8_blocks(c, odd, {2, 2}, "w").to(dtype)));
  }
  EXPECT_THAT(test::error_of([&] { dequantize_fp8_blocks(c, scale, {2, 4}, "x"); }),
              HasSubstr("x: FP8 blocks [2, 4] need uint8 codes [..., R, C] and floating scales [..., ceil(R / 2), "
                        "ceil(C / 4)], got [3, 5] and [2, 3]"));
}

// Each F8_E4M3 weight with its scale_inv reads as one float32 tensor, the scale hidden; the rest
// as stored; what cannot be dequantised is named.
TEST(Fp8, SourcePresentsEachWeightWithItsScaleAsOneTensor) {
  const auto w = codes({0x38, 0x40, 0xB8, 0x01, 0x30, 0x7E}, {2, 3});
  const auto s = torch::tensor({0.5f, 0.25f}).view({1, 2});
  const auto bias = torch::randn({3});
  MemoryTensors file("memory.safetensors");
  file.add("l.weight", w, StoredDType::F8_E4M3);
  file.add("l.weight_scale_inv", s);
  file.add("l.bias", bias);
  const Fp8Dequantized source(file, blocks(2, 2));
  EXPECT_EQ(source.quantised_count(), 1u);
  ASSERT_EQ(source.tensors().size(), 2u);
  EXPECT_EQ(source.tensors()[0].name, "l.weight");
  EXPECT_EQ(source.tensors()[0].dtype, StoredDType::F32);
  EXPECT_EQ(source.tensors()[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(source.tensors()[1].name, "l.bias");
  EXPECT_TRUE(source.load("l.weight").equal(torch::tensor({0.5f, 1.0f, -0.25f, std::ldexp(0.5f, -9), 0.25f, 112.0f}).view({2, 3})));
  EXPECT_TRUE(source.load("l.bias").equal(bias));
  EXPECT_EQ(source.describe(), "memory.safetensors");
  EXPECT_EQ(source.summary(), "1 weight dequantised, in blocks of [2, 2]");
  // In the dtype the model loads in.
  const Fp8Dequantized in_bf16(file, blocks(2, 2), torch::kBFloat16);
  EXPECT_EQ(in_bf16.tensors()[0].dtype, StoredDType::BF16);
  EXPECT_TRUE(in_bf16.load("l.weight").equal(source.load("l.weight").to(torch::kBFloat16)));

  MemoryTensors plain("memory.safetensors");
  plain.add("l.bias", bias);
  plain.add("l.weight_scale_inv", s);  // a lone scale stays: loading names it
  EXPECT_EQ(Fp8Dequantized(plain, {}).tensors().size(), 2u);

  MemoryTensors lone("memory.safetensors");
  lone.add("l.weight", w, StoredDType::F8_E4M3);
  EXPECT_THAT(test::error_of([&] { Fp8Dequantized{lone, {}}; }),
              HasSubstr("memory.safetensors: l.weight is F8_E4M3 without l.weight_scale_inv"));
  EXPECT_THAT(test::error_of([&] { Fp8Dequantized{file, blocks(1, 2)}; }),
              HasSubstr("l.weight [2, 3] scaled in blocks of [1, 2] (weight_block_size) needs l.weight_scale_inv F32 "
                        "[2, 2], it is F32 [1, 2]"));
  MemoryTensors integer_scale("memory.safetensors");
  integer_scale.add("l.weight", w, StoredDType::F8_E4M3);
  integer_scale.add("l.weight_scale_inv", s.to(torch::kInt), StoredDType::I32);
  EXPECT_THAT(test::error_of([&] { Fp8Dequantized{integer_scale, blocks(2, 2)}; }), HasSubstr("it is I32 [1, 2]"));
}

// compressed-tensors' tilings (config_groups' weights.strategy): one scale per tensor (stored [1]),
// per output channel [R, 1], per group of input columns [R, ceil(C / g)], per block; the
// activation scales hidden and counted, never read.
TEST(Fp8, CompressedTensorsScalesPerTensorChannelGroupAndBlock) {
  const auto ones = torch::full({2, 5}, 0x38, torch::kByte);  // 1.0 everywhere
  MemoryTensors file("ct.safetensors");
  file.add("t.weight", ones, StoredDType::F8_E4M3);
  file.add("t.weight_scale", torch::tensor({0.5f}));
  file.add("t.input_scale", torch::tensor({0.01f}));
  file.add("c.weight", ones, StoredDType::F8_E4M3);
  file.add("c.weight_scale", torch::tensor({2.0f, 3.0f}).view({2, 1}));
  file.add("g.weight", ones, StoredDType::F8_E4M3);
  file.add("g.weight_scale", torch::tensor({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}).view({2, 3}));
  file.add("b.weight", ones, StoredDType::F8_E4M3);
  file.add("b.weight_scale", torch::tensor({7.0f, 8.0f}).view({1, 2}));
  file.add("self_attn.k_scale", torch::tensor({1.0f}));
  Fp8Scaling scaling{"_scale",
                     {{Fp8Strategy::Kind::Tensor, {}},
                      {Fp8Strategy::Kind::Channel, {}},
                      {Fp8Strategy::Kind::Group, {1, 2}},
                      {Fp8Strategy::Kind::Block, {2, 4}}},
                     "quantization_config.config_groups",
                     true};
  const Fp8Dequantized source(file, scaling);
  ASSERT_EQ(source.tensors().size(), 4u);  // the scales and both activation scales hidden
  for (const auto& t : source.tensors()) EXPECT_EQ(t.dtype, StoredDType::F32) << t.name;
  EXPECT_TRUE(source.load("t.weight").equal(torch::full({2, 5}, 0.5f)));
  EXPECT_TRUE(source.load("c.weight").equal(torch::tensor({2.0f, 3.0f}).view({2, 1}).expand({2, 5})));
  EXPECT_TRUE(source.load("g.weight").equal(
      torch::tensor({1.0f, 1.0f, 2.0f, 2.0f, 3.0f, 4.0f, 4.0f, 5.0f, 5.0f, 6.0f}).view({2, 5})));
  EXPECT_TRUE(source.load("b.weight").equal(
      torch::tensor({7.0f, 7.0f, 7.0f, 7.0f, 8.0f, 7.0f, 7.0f, 7.0f, 7.0f, 8.0f}).view({2, 5})));
  EXPECT_EQ(source.summary(),
            "4 weights dequantised, 1 in blocks of [2, 4], 1 in groups of 2, 1 per output channel, 1 per tensor; "
            "2 activation scales unread");

  // Without the activation-scale rule (quant_method "fp8"), an input_scale is an unexpected tensor.
  scaling.activation_scales = false;
  EXPECT_EQ(Fp8Dequantized(file, scaling).tensors().size(), 6u);
  // Groups of 3 and blocks of [1, 4] both make a [2, 5] weight's scale [2, 2] but tile it
  // differently: refused.
  MemoryTensors two("two.safetensors");
  two.add("x.weight", ones, StoredDType::F8_E4M3);
  two.add("x.weight_scale", torch::ones({2, 2}));
  const Fp8Scaling clash{"_scale", {{Fp8Strategy::Kind::Group, {1, 3}}, {Fp8Strategy::Kind::Block, {1, 4}}},
                         "quantization_config.config_groups", true};
  EXPECT_THAT(test::error_of([&] { Fp8Dequantized{two, clash}; }),
              HasSubstr("two.safetensors: x.weight_scale [2, 2] reads as in groups of 3 and as in blocks of [1, 4] "
                        "(quantization_config.config_groups) for x.weight [2, 5]; PosLens cannot tell which"));
  const Fp8Scaling none{"_scale", {}, "quantization_config.config_groups", true};
  EXPECT_THAT(test::error_of([&] { Fp8Dequantized{two, none}; }),
              HasSubstr("x.weight is F8_E4M3, but quantization_config.config_groups quantises no weights"));
  const Fp8Scaling channel{"_scale", {{Fp8Strategy::Kind::Channel, {}}, {Fp8Strategy::Kind::Tensor, {}}},
                           "quantization_config.config_groups", true};
  EXPECT_THAT(test::error_of([&] { Fp8Dequantized{two, channel}; }),
              HasSubstr("x.weight [2, 5] scaled per output channel or per tensor (quantization_config.config_groups) "
                        "needs x.weight_scale F32 [2, 1] or [1, 1], it is F32 [2, 2]"));
}

// config.json's quantization_config as fp8_scaling_in reads it; what PosLens cannot read, named.
TEST(Fp8, ScalingFromQuantizationConfig) {
  using nlohmann::json;
  const auto read = [](const json& q) { return fp8_scaling_in(json{{"quantization_config", q}}, "config.json"); };
  EXPECT_EQ(fp8_scaling_in(json::object(), "config.json").strategies.size(), 1u);  // none: the default
  const auto deepseek = read({{"quant_method", "fp8"}, {"weight_block_size", {2, 4}}});
  EXPECT_EQ(deepseek.scale_suffix, "_scale_inv");
  EXPECT_FALSE(deepseek.activation_scales);
  ASSERT_EQ(deepseek.strategies.size(), 1u);
  EXPECT_EQ(deepseek.strategies[0].text(), "in blocks of [2, 4]");
  EXPECT_EQ(read({{"quant_method", "fp8"}}).strategies[0].text(), "in blocks of [128, 128]");
  EXPECT_EQ(read({{"quant_method", "mxfp4"}}).scale_suffix, "_scale_inv");

  const json fp8_weights = {{"num_bits", 8}, {"type", "float"}, {"symmetric", true}, {"strategy", "channel"}};
  auto group = [&](const std::string& strategy, json extra = json::object()) {
    json w = fp8_weights;
    w["strategy"] = strategy;
    w.update(extra);
    return json{{"targets", {"Linear"}}, {"weights", w}, {"input_activations", nullptr}};
  };
  json ct = {{"quant_method", "compressed-tensors"}, {"format", "float-quantized"}, {"transform_config", json::object()},
             {"sparsity_config", json::object()},
             {"config_groups", {{"group_0", group("channel")}, {"group_1", group("tensor")},
                                {"group_2", group("block", {{"block_structure", {16, 12}}})},
                                {"group_3", group("group", {{"group_size", 64}})},
                                {"group_4", group("channel")},
                                {"kv", {{"targets", {"Attention"}}, {"weights", nullptr}}}}}};
  const auto scaling = read(ct);
  EXPECT_EQ(scaling.scale_suffix, "_scale");
  EXPECT_TRUE(scaling.activation_scales);
  std::vector<std::string> texts;
  for (const auto& s : scaling.strategies) texts.push_back(s.text());
  EXPECT_EQ(texts, (std::vector<std::string>{"per output channel", "per tensor", "in blocks of [16, 12]", "in groups of 64"}));

  const auto refused = [&](const std::function<void(json&)>& edit) {
    json q = ct;
    edit(q);
    return test::error_of([&] { read(q); });
  };
  EXPECT_THAT(refused([](json& q) { q["config_groups"]["group_0"]["format"] = "pack-quantized"; }),
              HasSubstr("config.json: quantization_config.config_groups.group_0 format \"pack-quantized\": PosLens reads "
                        "compressed-tensors' \"float-quantized\" FP8 weights"));
  EXPECT_THAT(refused([](json& q) { q["config_groups"]["group_1"]["weights"]["type"] = "int"; }),
              HasSubstr("quantization_config.config_groups.group_1.weights quantises weights to 8-bit int"));
  EXPECT_THAT(refused([](json& q) { q["config_groups"]["group_1"]["weights"]["symmetric"] = false; }),
              HasSubstr("quantises weights to asymmetric 8-bit float"));
  EXPECT_THAT(refused([](json& q) { q["config_groups"]["group_0"]["weights"]["strategy"] = "token"; }),
              HasSubstr("group_0.weights.strategy \"token\": PosLens reads FP8 weights scaled per tensor, channel, "
                        "group or block"));
  EXPECT_THAT(refused([](json& q) { q["config_groups"]["group_2"]["weights"].erase("block_structure"); }),
              HasSubstr("quantization_config.config_groups.group_2.weights.block_structure must be two positive "
                        "integers, got null"));
  EXPECT_THAT(refused([](json& q) { q["transform_config"] = {{"config_groups", {{"u", json::object()}}}}; }),
              HasSubstr("quantization_config.transform_config is set (the weights are stored rotated)"));
  EXPECT_THAT(refused([](json& q) { q["quant_method"] = "awq"; }),
              HasSubstr("quantization_config.quant_method \"awq\": PosLens dequantises \"fp8\" (block scales), "
                        "\"compressed-tensors\" (FP8 weights) and \"mxfp4\""));
}

}  // namespace
}  // namespace poslens
