// Tests of the safetensors reader/writer: round trips, hand-written files that follow the
// huggingface/safetensors spec, sharded indexes, and one test per broken input checking the
// error text.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "core/base/error.h"
#include "core/formats/safetensors.h"
#include "fixtures.h"

namespace poslens {
namespace {

using test::Contains;
using test::error_of;

namespace fs = std::filesystem;

/// Raw bytes of a safetensors file: u64 LE header length (the real one unless given), header, data.
std::string st_bytes(const std::string& header, const std::string& data = "",
                     std::optional<std::uint64_t> length = std::nullopt) {
  const std::uint64_t n = length.value_or(header.size());
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Little-endian bytes of float values (the test host is little-endian, as is the format).
std::string f32_bytes(std::initializer_list<float> values) {
  std::string out;
  for (float v : values) {
    char b[4];
    std::memcpy(b, &v, 4);
    out.append(b, 4);
  }
  return out;
}


/// Writes `bytes` to <scratch>/bad.safetensors and returns the message of opening it.
std::string open_error(const std::string& bytes) {
  const fs::path path = test::scratch_dir() / "bad.safetensors";
  write_file(path, bytes);
  return error_of([&] { SafetensorsFile file(path.string()); });
}

// ----------------------------------------------------------------------------------------------
// Round trips and valid files

TEST(Safetensors, DTypeNamesAndSizes) {
  EXPECT_STREQ(to_string(StoredDType::F32), "F32");
  EXPECT_STREQ(to_string(StoredDType::BF16), "BF16");
  EXPECT_STREQ(to_string(StoredDType::Bool), "BOOL");
  EXPECT_EQ(element_size(StoredDType::F64), 8u);
  EXPECT_EQ(element_size(StoredDType::I64), 8u);
  EXPECT_EQ(element_size(StoredDType::F32), 4u);
  EXPECT_EQ(element_size(StoredDType::F16), 2u);
  EXPECT_EQ(element_size(StoredDType::BF16), 2u);
  EXPECT_EQ(element_size(StoredDType::U8), 1u);
  EXPECT_EQ(element_size(StoredDType::Bool), 1u);
}

TEST(Safetensors, RoundTripDTypesAndMetadata) {
  const fs::path path = test::scratch_dir() / "model.safetensors";
  const at::Tensor f32 = torch::arange(6, torch::kFloat).reshape({2, 3}) * 0.5f - 1.0f;
  const at::Tensor f16 = torch::tensor({1.5f, -2.25f, 65504.0f, 0.0f}).to(torch::kHalf);
  const at::Tensor bf16 = torch::tensor({{3.0f, -0.5f}, {256.0f, 1e-3f}}).to(torch::kBFloat16);
  const at::Tensor i64 =
      torch::tensor({int64_t{-1}, int64_t{1} << 40, int64_t{7}}, torch::kLong);
  const std::map<std::string, std::string> meta = {{"format", "pt"}, {"source", "unit test"}};
  write_safetensors(path.string(), {{"w.f32", f32}, {"w.f16", f16}, {"w.bf16", bf16}, {"i64", i64}},
                    meta);
  EXPECT_TRUE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path.string() + ".tmp"));

  // Header padded to a multiple of 8; data 24 + 8 + 8 + 24 bytes.
  const std::string raw = read_file(path);
  ASSERT_GE(raw.size(), 8u);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(raw[i]);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(raw.size(), 8 + n + 24 + 8 + 8 + 24);
  EXPECT_NE(raw.find(R"("data_offsets":[24,32])"), std::string::npos) << raw.substr(8, n);

  SafetensorsFile file(path.string());
  EXPECT_EQ(file.describe(), path.string());
  EXPECT_EQ(file.metadata(), meta);
  const auto& infos = file.tensors();
  ASSERT_EQ(infos.size(), 4u);
  EXPECT_EQ(infos[0].name, "w.f32");
  EXPECT_EQ(infos[0].dtype, StoredDType::F32);
  EXPECT_EQ(infos[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(infos[1].name, "w.f16");
  EXPECT_EQ(infos[1].dtype, StoredDType::F16);
  EXPECT_EQ(infos[1].shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(infos[2].name, "w.bf16");
  EXPECT_EQ(infos[2].dtype, StoredDType::BF16);
  EXPECT_EQ(infos[2].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(infos[3].name, "i64");
  EXPECT_EQ(infos[3].dtype, StoredDType::I64);

  const at::Tensor a = file.load("w.f32");
  EXPECT_EQ(a.scalar_type(), torch::kFloat);
  EXPECT_TRUE(a.device().is_cpu());
  EXPECT_TRUE(torch::equal(a, f32));
  EXPECT_FLOAT_EQ(a[1][2].item<float>(), 1.5f);  // 5 * 0.5 - 1
  const at::Tensor b = file.load("w.f16");
  EXPECT_EQ(b.scalar_type(), torch::kHalf);
  EXPECT_TRUE(torch::equal(b, f16));
  EXPECT_FLOAT_EQ(b[2].item<float>(), 65504.0f);
  const at::Tensor c = file.load("w.bf16");
  EXPECT_EQ(c.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(c, bf16));
  const at::Tensor d = file.load("i64");
  EXPECT_EQ(d.scalar_type(), torch::kLong);
  EXPECT_EQ(d[1].item<int64_t>(), int64_t{1} << 40);
  EXPECT_TRUE(torch::equal(d, i64));
}

TEST(Safetensors, LoadAliasesTheMappingAndOutlivesTheFile) {
  const fs::path path = test::scratch_dir() / "m.safetensors";
  write_safetensors(path.string(), {{"x", torch::tensor({4.0f, 5.0f, 6.0f})}});
  at::Tensor kept;
  {
    SafetensorsFile file(path.string());
    const at::Tensor first = file.load("x");
    const at::Tensor second = file.load("x");
    EXPECT_EQ(first.data_ptr(), second.data_ptr());  // no copy: both view the mapping
    kept = first;
  }
  EXPECT_FLOAT_EQ(kept[2].item<float>(), 6.0f);  // the mapping lives as long as the tensor
}

TEST(Safetensors, ReadsHandWrittenSpecFile) {
  // Exactly as the spec describes it: unpadded header, offsets relative to the data buffer,
  // tensors stored out of header order.
  const std::string header =
      R"({"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("a":{"dtype":"I8","shape":[1,3],"data_offsets":[8,11]},)"
      R"("__metadata__":{"k":"v"}})";
  const std::string data = f32_bytes({1.0f, -2.0f}) + std::string("\x01\xff\x7f", 3);
  const fs::path path = test::scratch_dir() / "spec.safetensors";
  write_file(path, st_bytes(header, data));
  SafetensorsFile file(path.string());
  ASSERT_EQ(file.tensors().size(), 2u);
  EXPECT_EQ(file.tensors()[0].name, "b");  // header order
  EXPECT_EQ(file.tensors()[1].name, "a");
  EXPECT_EQ(file.metadata().at("k"), "v");
  const at::Tensor b = file.load("b");
  EXPECT_FLOAT_EQ(b[0].item<float>(), 1.0f);
  EXPECT_FLOAT_EQ(b[1].item<float>(), -2.0f);
  const at::Tensor a = file.load("a");
  EXPECT_EQ(a.scalar_type(), torch::kChar);
  EXPECT_EQ(a.sizes(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(a[0][0].item<int>(), 1);
  EXPECT_EQ(a[0][1].item<int>(), -1);
  EXPECT_EQ(a[0][2].item<int>(), 127);
}

TEST(Safetensors, MisalignedDataIsCopiedWithCorrectValues) {
  // A 1-byte U8 tensor first puts the F32 tensor at buffer offset 1.
  std::string header =
      R"({"u":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
      R"("f":{"dtype":"F32","shape":[2],"data_offsets":[1,9]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  const fs::path path = test::scratch_dir() / "odd.safetensors";
  write_file(path, st_bytes(header, std::string("\x09", 1) + f32_bytes({0.25f, 3.0f})));
  SafetensorsFile file(path.string());
  const at::Tensor f = file.load("f");
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(f.data_ptr()) % 4, 0u);
  EXPECT_FLOAT_EQ(f[0].item<float>(), 0.25f);
  EXPECT_FLOAT_EQ(f[1].item<float>(), 3.0f);
  EXPECT_EQ(file.load("u")[0].item<int>(), 9);
}

TEST(Safetensors, ZeroByteAndScalarTensors) {
  const fs::path path = test::scratch_dir() / "z.safetensors";
  write_safetensors(path.string(), {{"empty", torch::zeros({0, 4})},
                                    {"scalar", torch::tensor(2.5, torch::kDouble)},
                                    {"flags", torch::tensor({true, false, true})}});
  SafetensorsFile file(path.string());
  const at::Tensor empty = file.load("empty");
  EXPECT_EQ(empty.sizes(), (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(empty.numel(), 0);
  const at::Tensor scalar = file.load("scalar");
  EXPECT_EQ(scalar.dim(), 0);
  EXPECT_DOUBLE_EQ(scalar.item<double>(), 2.5);
  const at::Tensor flags = file.load("flags");
  EXPECT_EQ(flags.scalar_type(), torch::kBool);
  EXPECT_TRUE(flags[2].item<bool>());
  EXPECT_FALSE(flags[1].item<bool>());

  // A file holding only a zero-byte tensor: empty data buffer.
  const fs::path only = test::scratch_dir() / "only-empty.safetensors";
  write_file(only, st_bytes(R"({"e":{"dtype":"BF16","shape":[3,0],"data_offsets":[0,0]}})"));
  SafetensorsFile f2(only.string());
  EXPECT_EQ(f2.load("e").numel(), 0);
  EXPECT_EQ(f2.load("e").scalar_type(), torch::kBFloat16);
}

TEST(Safetensors, WritesNonContiguousTensorsInLogicalOrder) {
  const fs::path path = test::scratch_dir() / "t.safetensors";
  const at::Tensor base = torch::arange(6, torch::kInt).reshape({2, 3});
  const at::Tensor transposed = base.t();  // [3, 2], not contiguous
  ASSERT_FALSE(transposed.is_contiguous());
  write_safetensors(path.string(), {{"t", transposed}});
  SafetensorsFile file(path.string());
  const at::Tensor t = file.load("t");
  EXPECT_EQ(t.sizes(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(t[0][1].item<int>(), 3);
  EXPECT_EQ(t[2][0].item<int>(), 2);
  EXPECT_TRUE(torch::equal(t, transposed));
}

TEST(Safetensors, WriterRejectsUnsupportedDTypeAndLeavesNoFile) {
  const fs::path path = test::scratch_dir() / "c.safetensors";
  const std::string msg = error_of([&] {
    write_safetensors(path.string(), {{"ok", torch::ones({2})},
                                      {"z", torch::zeros({2}, torch::kComplexFloat)}});
  });
  EXPECT_TRUE(Contains(msg, "tensor \"z\""));
  EXPECT_TRUE(Contains(msg, "cannot be stored"));
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path.string() + ".tmp"));
  EXPECT_TRUE(Contains(error_of([&] {
                         write_safetensors(path.string(), {{"a", torch::ones({1})},
                                                           {"a", torch::ones({1})}});
                       }),
                       "given twice"));
}

TEST(Safetensors, WriterReportsUnwritableFolder) {
  const fs::path path = test::scratch_dir() / "no-such-folder" / "x.safetensors";
  const std::string msg =
      error_of([&] { write_safetensors(path.string(), {{"a", torch::ones({1})}}); });
  EXPECT_TRUE(Contains(msg, "x.safetensors") && Contains(msg, "does not exist")) << msg;
}

TEST(Safetensors, LoadUnknownNameNamesTensorAndFile) {
  const fs::path path = test::scratch_dir() / "m.safetensors";
  write_safetensors(path.string(), {{"x", torch::ones({1})}});
  SafetensorsFile file(path.string());
  const std::string msg = error_of([&] { file.load("wte.weight"); });
  EXPECT_TRUE(Contains(msg, "\"wte.weight\""));
  EXPECT_TRUE(Contains(msg, path.string()));
}

// ----------------------------------------------------------------------------------------------
// Broken inputs: each must throw poslens::Error with a precise message, never crash.

TEST(SafetensorsBroken, TruncatedToFourBytes) {
  const std::string msg = open_error(std::string("\x10\x00\x00\x00", 4));
  EXPECT_TRUE(Contains(msg, "bad.safetensors: file is 4 bytes, too short"));
}

TEST(SafetensorsBroken, HeaderLengthLargerThanFile) {
  const std::string msg = open_error(st_bytes("{}", "", 1000));
  EXPECT_TRUE(Contains(msg, "bad.safetensors: header length 1000 bytes does not fit in the "
                            "10-byte file"));
}

TEST(SafetensorsBroken, HeaderLengthTwoToThe62) {
  const std::string msg = open_error(st_bytes("{}", "", std::uint64_t{1} << 62));
  EXPECT_TRUE(Contains(msg, "header length 4611686018427387904 bytes exceeds the limit of "
                            "100000000 bytes"));
}

TEST(SafetensorsBroken, InvalidJson) {
  EXPECT_TRUE(Contains(open_error(st_bytes(R"({"a": {"dtype": )")),
                       "bad.safetensors: header is not valid UTF-8 JSON: "));
  // Bytes that are not UTF-8 inside a string.
  EXPECT_TRUE(Contains(open_error(st_bytes("{\"\xff\xfe\": 1}")), "not valid UTF-8 JSON"));
}

TEST(SafetensorsBroken, JsonArrayInsteadOfObject) {
  EXPECT_TRUE(Contains(open_error(st_bytes("[1, 2, 3]")),
                       "bad.safetensors: header is a JSON array, expected an object"));
}

TEST(SafetensorsBroken, EntryNotAnObject) {
  EXPECT_TRUE(Contains(open_error(st_bytes(R"({"w": [1, 2]})")),
                       "tensor \"w\": entry is a JSON array"));
}

TEST(SafetensorsBroken, UnknownDType) {
  const std::string msg =
      open_error(st_bytes(R"({"w":{"dtype":"F8_E5M2","shape":[1],"data_offsets":[0,1]}})", "x"));
  EXPECT_TRUE(Contains(msg, "bad.safetensors: tensor \"w\": unknown dtype \"F8_E5M2\""));
}

TEST(SafetensorsBroken, NegativeShapeDimension) {
  const std::string msg = open_error(
      st_bytes(R"({"w":{"dtype":"F32","shape":[2,-3],"data_offsets":[0,24]}})", std::string(24, 0)));
  EXPECT_TRUE(Contains(msg, "tensor \"w\": shape [2,-3]: dimension 1 is -3"));
}

TEST(SafetensorsBroken, ShapeOverflow) {
  const std::string msg = open_error(st_bytes(
      R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})"));
  EXPECT_TRUE(Contains(msg, "tensor \"w\": shape [4294967296,4294967296] has too many elements"));
  // Even with a zero dimension the other ones may not overflow (strides would).
  EXPECT_TRUE(Contains(open_error(st_bytes(R"({"w":{"dtype":"U8","shape":[0,4611686018427387904,)"
                                           R"(4611686018427387904],"data_offsets":[0,0]}})")),
                       "has too many elements"));
  EXPECT_TRUE(Contains(open_error(st_bytes(
                           R"({"w":{"dtype":"U8","shape":[1e30],"data_offsets":[0,0]}})")),
                       "dimension 0 is 1e+30"));
}

TEST(SafetensorsBroken, ShapeTimesDTypeDiffersFromByteSpan) {
  const fs::path path = test::scratch_dir() / "model.safetensors";
  write_file(path, st_bytes(R"({"wte.weight":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})",
                            std::string(24, 0)));
  const std::string msg = error_of([&] { SafetensorsFile f(path.string()); });
  EXPECT_EQ(msg, path.string() +
                     ": tensor \"wte.weight\": shape [2, 3] x F32 needs 24 bytes but data_offsets "
                     "span 20");
}

TEST(SafetensorsBroken, RangePastTheEnd) {
  const std::string msg = open_error(
      st_bytes(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", std::string(8, 0)));
  EXPECT_TRUE(Contains(msg, "tensor \"w\": data_offsets [0, 16] reach past the end of the data "
                            "buffer (8 bytes)"));
  // Offsets near 2^64 must not wrap around.
  EXPECT_TRUE(Contains(open_error(st_bytes(R"({"w":{"dtype":"U8","shape":[1],)"
                                           R"("data_offsets":[18446744073709551615,0]}})")),
                       "\"data_offsets\" must be [begin, end]"));
  EXPECT_TRUE(Contains(open_error(st_bytes(
                           R"({"w":{"dtype":"U8","shape":[0],"data_offsets":[5,4]}})", "12345")),
                       "data_offsets [5, 4] end before begin"));
}

TEST(SafetensorsBroken, TwoOverlappingRanges) {
  const std::string msg = open_error(
      st_bytes(R"({"b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]},)"
               R"("a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})",
               std::string(24, 0)));
  EXPECT_TRUE(Contains(msg, "bad.safetensors: tensors \"a\" [0, 16) and \"b\" [8, 24) overlap"));
}

TEST(SafetensorsBroken, MetadataWithNonStringValue) {
  const std::string msg = open_error(st_bytes(R"({"__metadata__":{"format":"pt","step":100}})"));
  EXPECT_TRUE(Contains(msg, "\"__metadata__\" value for key \"step\" is a JSON number, expected "
                            "a string"));
  EXPECT_TRUE(Contains(open_error(st_bytes(R"({"__metadata__":["pt"]})")),
                       "\"__metadata__\" is a JSON array"));
}

TEST(SafetensorsBroken, DuplicateTensorName) {
  const std::string msg = open_error(
      st_bytes(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
               R"("w":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
               "ab"));
  EXPECT_TRUE(Contains(msg, "has the key \"w\" twice"));
}

TEST(SafetensorsBroken, DeeplyNestedJson) {
  const std::string deep = "{\"w\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_TRUE(Contains(open_error(st_bytes(deep)), "nests deeper than 32 levels"));
}

TEST(SafetensorsBroken, NotARegularFileOrMissing) {
  const fs::path dir = test::scratch_dir();
  EXPECT_TRUE(Contains(error_of([&] { SafetensorsFile f(dir.string()); }),
                       "not a regular file"));
  EXPECT_TRUE(Contains(error_of([&] { SafetensorsFile f((dir / "none.safetensors").string()); }),
                       "none.safetensors: cannot open"));
}

}  // namespace
}  // namespace poslens
