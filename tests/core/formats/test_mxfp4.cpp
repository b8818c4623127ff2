// MXFP4 (OCP MX v1.0; gpt-oss's experts, HF integrations/mxfp4.py): hand-computed codes and
// scales, the layout HF's convert_moe_packed_tensors gives, and the source that presents each
// X_blocks + X_scales pair as X. HF's own dequantisation of a whole model is the reference of
// ArchReference.GptOssMxfp4ExpertsDequantisedOnLoad.
#include <torch/torch.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/formats/mxfp4.h"
#include "core/formats/safetensors.h"
#include "fixtures.h"

namespace poslens {
namespace {

using ::testing::HasSubstr;

// One expert, one row, two groups of 32. Group 0: byte 0 = 0x21 (low nibble 1 -> 0.5 first,
// high nibble 2 -> 1.0), byte 1 = 0xF8 (8 -> -0, 15 -> -6), scale 128 (x2); group 1: byte 0 =
// 0x07 (7 -> 6, 0 -> 0), scale 120 (x2^-7).
TEST(Mxfp4, DequantisesCodesTimesTheirBlocksPowerOfTwo) {
  auto blocks = torch::zeros({1, 1, 2, 16}, torch::kByte);
  blocks[0][0][0][0] = 0x21;
  blocks[0][0][0][1] = 0xF8;
  blocks[0][0][1][0] = 0x07;
  const auto scales = torch::tensor({128, 120}, torch::kByte).view({1, 1, 2});
  const auto x = dequantize_mxfp4(blocks, scales, "x");
  ASSERT_EQ(x.sizes(), (std::vector<int64_t>{1, 64, 1}));  // [E, G·32, rows]
  EXPECT_EQ(x.scalar_type(), torch::kBFloat16);
  const auto v = x.to(torch::kFloat).flatten();
  EXPECT_EQ(v[0].item<float>(), 1.0f);
  EXPECT_EQ(v[1].item<float>(), 2.0f);
  EXPECT_EQ(v[2].item<float>(), 0.0f);
  EXPECT_TRUE(std::signbit(v[2].item<float>()));  // code 8 is -0
  EXPECT_EQ(v[3].item<float>(), -12.0f);
  EXPECT_EQ(v[32].item<float>(), 6.0f / 128);
  EXPECT_EQ(v.abs().sum().item<float>(), 1.0f + 2.0f + 12.0f + 6.0f / 128);
  // Rows become the last dimension: two rows, the second all code 1 at scale 127 (0.5).
  auto two = torch::zeros({1, 2, 1, 16}, torch::kByte);
  two[0][1].fill_(0x11);
  const auto y = dequantize_mxfp4(two, torch::full({1, 2, 1}, 127, torch::kByte), "y").to(torch::kFloat);
  EXPECT_TRUE(y.select(2, 0).eq(0).all().item<bool>());
  EXPECT_TRUE(y.select(2, 1).eq(0.5).all().item<bool>());
  EXPECT_THAT(test::error_of([&] { dequantize_mxfp4(two, torch::zeros({1, 2, 2}, torch::kByte), "w"); }),
              HasSubstr("w: MXFP4 needs uint8 blocks [E, rows, G, 16] and uint8 scales [E, rows, G], got [1, 2, 1, 16] and [1, 2, 2]"));
}

// A file's pairs read as the tensors they stand for; everything else as stored; a blocks tensor
// without its scales is named.
TEST(Mxfp4, SourcePresentsEachPairAsOneTensor) {
  const auto path = (test::scratch_dir() / "packed.safetensors").string();
  const auto blocks = torch::randint(0, 256, {2, 3, 2, 16}, torch::kInt).to(torch::kByte);
  const auto scales = torch::randint(120, 130, {2, 3, 2}, torch::kInt).to(torch::kByte);
  const auto other = torch::randn({3});
  write_safetensors(path, {{"e.w_blocks", blocks}, {"e.w_scales", scales}, {"e.b", other}});
  const SafetensorsFile file(path);
  const Mxfp4Dequantized source(file);
  EXPECT_EQ(source.packed_count(), 1u);
  ASSERT_EQ(source.tensors().size(), 2u);
  EXPECT_EQ(source.tensors()[0].name, "e.w");
  EXPECT_EQ(source.tensors()[0].dtype, StoredDType::BF16);
  EXPECT_EQ(source.tensors()[0].shape, (std::vector<int64_t>{2, 64, 3}));
  EXPECT_EQ(source.tensors()[1].name, "e.b");
  EXPECT_TRUE(source.load("e.w").equal(dequantize_mxfp4(blocks, scales, "e.w")));
  EXPECT_TRUE(source.load("e.b").equal(other));
  EXPECT_EQ(source.describe(), file.describe());

  const auto plain_path = (test::scratch_dir() / "plain.safetensors").string();
  write_safetensors(plain_path, {{"e.b", other}});
  const SafetensorsFile plain(plain_path);
  EXPECT_EQ(Mxfp4Dequantized(plain).packed_count(), 0u);

  const auto lone = (test::scratch_dir() / "lone.safetensors").string();
  write_safetensors(lone, {{"e.w_blocks", blocks}, {"e.w_scales", scales.narrow(2, 0, 1).contiguous()}});
  const SafetensorsFile bad(lone);
  EXPECT_THAT(test::error_of([&] { Mxfp4Dequantized{bad}; }),
              HasSubstr("e.w_blocks [2, 3, 2, 16] is MXFP4 blocks without e.w_scales uint8 [2, 3, 2] (it is U8 [2, 3, 1])"));
}

}  // namespace
}  // namespace poslens
