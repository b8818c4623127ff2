// FP8 block quantisation (DeepSeek-V3's release, HF quant_method "fp8"; core/formats/fp8.h):
// hand-computed E4M3 codes, partial edge blocks, leading dimensions, which way round a block
// lies, and the source that presents each weight + weight_scale_inv as one float32 tensor. HF's
// own dequantisation of a whole model, and PyTorch's float8_e4m3fn values of all 256 codes, are
// the references of ArchReference.DeepseekV3Fp8BlockQuantisedRelease.
#include <torch/torch.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/formats/fp8.h"
#include "core/formats/memory_tensors.h"
#include "fixtures.h"

namespace poslens {
namespace {

using ::testing::HasSubstr;

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
  const Fp8BlockDequantized source(file, {2, 2});
  EXPECT_EQ(source.quantised_count(), 1u);
  ASSERT_EQ(source.tensors().size(), 2u);
  EXPECT_EQ(source.tensors()[0].name, "l.weight");
  EXPECT_EQ(source.tensors()[0].dtype, StoredDType::F32);
  EXPECT_EQ(source.tensors()[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(source.tensors()[1].name, "l.bias");
  EXPECT_TRUE(source.load("l.weight").equal(torch::tensor({0.5f, 1.0f, -0.25f, std::ldexp(0.5f, -9), 0.25f, 112.0f}).view({2, 3})));
  EXPECT_TRUE(source.load("l.bias").equal(bias));
  EXPECT_EQ(source.describe(), "memory.safetensors");

  MemoryTensors plain("memory.safetensors");
  plain.add("l.bias", bias);
  plain.add("l.weight_scale_inv", s);  // a lone scale stays: loading names it
  EXPECT_EQ(Fp8BlockDequantized(plain, {}).tensors().size(), 2u);

  MemoryTensors lone("memory.safetensors");
  lone.add("l.weight", w, StoredDType::F8_E4M3);
  EXPECT_THAT(test::error_of([&] { Fp8BlockDequantized{lone, {}}; }),
              HasSubstr("memory.safetensors: l.weight is F8_E4M3 without l.weight_scale_inv"));
  EXPECT_THAT(test::error_of([&] { Fp8BlockDequantized{file, {1, 2}}; }),
              HasSubstr("l.weight [2, 3] in FP8 blocks of [1, 2] (weight_block_size) needs l.weight_scale_inv F32 "
                        "[2, 2], it is F32 [1, 2]"));
  MemoryTensors integer_scale("memory.safetensors");
  integer_scale.add("l.weight", w, StoredDType::F8_E4M3);
  integer_scale.add("l.weight_scale_inv", s.to(torch::kInt), StoredDType::I32);
  EXPECT_THAT(test::error_of([&] { Fp8BlockDequantized{integer_scale, {2, 2}}; }), HasSubstr("it is I32 [1, 2]"));
}

}  // namespace
}  // namespace poslens
