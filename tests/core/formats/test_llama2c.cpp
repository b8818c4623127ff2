// Tests of the llama2.c checkpoint reader (core/llama2c.h) against the real stories260K
// fixture, synthetic files with known contents, and deliberately broken files.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "core/formats/llama2c.h"
#include "core/models/architectures.h"
#include "fixtures.h"

namespace poslens {
namespace {

namespace fs = std::filesystem;

fs::path stories_bin() { return test::stories_dir() / "stories260K.bin"; }

std::vector<char> read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_all(const fs::path& p, const std::vector<char>& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// Reads one little-endian float32 at a byte offset, independently of the reader.
float float_at(const fs::path& p, uint64_t offset) {
  std::ifstream in(p, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset));
  unsigned char b[4] = {};
  in.read(reinterpret_cast<char*>(b), 4);
  EXPECT_TRUE(in.good()) << "cannot read offset " << offset;
  const uint32_t u = uint32_t{b[0]} | (uint32_t{b[1]} << 8) | (uint32_t{b[2]} << 16) |
                     (uint32_t{b[3]} << 24);
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

void set_header_field(std::vector<char>& bytes, int field, int32_t value) {
  std::memcpy(bytes.data() + 4 * field, &value, 4);  // tests run on little-endian hosts
}

/// Message of the poslens::Error thrown by opening `p`; fails the test if none is thrown.
std::string open_error(const fs::path& p) {
  try {
    Llama2cFile file(p.string());
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no poslens::Error for " << p;
  return {};
}

// stories260K: dim=64, hidden_dim=172, n_layers=5, n_heads=8, n_kv_heads=4, vocab=512, seq=512.
constexpr int64_t kDim = 64, kHidden = 172, kLayers = 5, kVocab = 512, kSeq = 512, kKvDim = 32,
                  kDHead = 8;

// Float index (from the end of the 28-byte header) where each stored group starts.
constexpr int64_t kEmb = 0;
constexpr int64_t kRmsAtt = kEmb + kVocab * kDim;
constexpr int64_t kWq = kRmsAtt + kLayers * kDim;
constexpr int64_t kWk = kWq + kLayers * kDim * kDim;
constexpr int64_t kWv = kWk + kLayers * kKvDim * kDim;
constexpr int64_t kWo = kWv + kLayers * kKvDim * kDim;
constexpr int64_t kRmsFfn = kWo + kLayers * kDim * kDim;
constexpr int64_t kW1 = kRmsFfn + kLayers * kDim;
constexpr int64_t kW2 = kW1 + kLayers * kHidden * kDim;
constexpr int64_t kW3 = kW2 + kLayers * kDim * kHidden;
constexpr int64_t kRmsFinal = kW3 + kLayers * kHidden * kDim;
constexpr int64_t kFreq = kRmsFinal + kDim;
constexpr int64_t kEnd = kFreq + 2 * kSeq * kDHead / 2;
constexpr uint64_t byte_of(int64_t float_index) { return 28 + 4 * static_cast<uint64_t>(float_index); }

static_assert(byte_of(kEnd) == 1056540, "stories260K.bin size");

TEST(Llama2c, LoadsStories260KTensorTable) {
  POSLENS_REQUIRE_STORIES();
  Llama2cFile file(stories_bin().string());
  EXPECT_EQ(file.describe(), stories_bin().string());
  const auto& infos = file.tensors();
  ASSERT_EQ(infos.size(), static_cast<std::size_t>(1 + 9 * kLayers + 1));

  // File order: embedding, then each weight kind for all layers, then the final norm.
  std::vector<std::pair<std::string, std::vector<int64_t>>> expected;
  expected.push_back({"tok_embeddings.weight", {kVocab, kDim}});
  const std::pair<const char*, std::vector<int64_t>> kinds[] = {
      {"attention_norm.weight", {kDim}},
      {"attention.wq.weight", {kDim, kDim}},
      {"attention.wk.weight", {kKvDim, kDim}},
      {"attention.wv.weight", {kKvDim, kDim}},
      {"attention.wo.weight", {kDim, kDim}},
      {"ffn_norm.weight", {kDim}},
      {"feed_forward.w1.weight", {kHidden, kDim}},
      {"feed_forward.w2.weight", {kDim, kHidden}},
      {"feed_forward.w3.weight", {kHidden, kDim}}};
  for (const auto& [suffix, shape] : kinds)
    for (int64_t l = 0; l < kLayers; ++l)
      expected.push_back({"layers." + std::to_string(l) + "." + suffix, shape});
  expected.push_back({"norm.weight", {kDim}});

  for (std::size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(expected[i].first);
    EXPECT_EQ(infos[i].name, expected[i].first);
    EXPECT_EQ(infos[i].shape, expected[i].second);
    EXPECT_EQ(infos[i].dtype, StoredDType::F32);
    const at::Tensor t = file.load(infos[i].name);
    EXPECT_EQ(t.scalar_type(), torch::kFloat);
    EXPECT_EQ(t.sizes().vec(), expected[i].second);
    EXPECT_TRUE(t.is_contiguous());
    EXPECT_EQ(t.device().type(), torch::kCPU);
  }
}

TEST(Llama2c, Stories260KConfig) {
  POSLENS_REQUIRE_STORIES();
  Llama2cFile file(stories_bin().string());
  const ModelConfig c = llama2c_config(file.header());
  EXPECT_EQ(c.format, "llama2.c");
  EXPECT_EQ(c.architecture, "llama2.c");
  EXPECT_EQ(c.d_model, 64);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.d_head, 8);
  EXPECT_EQ(c.d_mlp, 172);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.n_ctx, 512);
  EXPECT_EQ(c.norm, NormType::RMSNorm);
  EXPECT_DOUBLE_EQ(c.norm_eps, 1e-5);
  EXPECT_EQ(c.mlp, MlpType::Gated);
  EXPECT_EQ(c.activation, Activation::SiLU);
  // run.c's RoPE as the one representation every format uses: a "rope" component.
  ASSERT_EQ(c.pe_components.size(), 1u);
  EXPECT_EQ(c.pe_components.front().type, "rope");
  const auto rope = nlohmann::json::parse(c.pe_components.front().params_json);
  EXPECT_EQ(rope["pairing"], "interleaved");
  EXPECT_DOUBLE_EQ(rope["rope_theta"].get<double>(), 10000.0);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_FALSE(c.attn_out_bias);
  EXPECT_FALSE(c.mlp_bias);
  EXPECT_EQ(c.sliding_window, 0);
  EXPECT_TRUE(c.causal);
  EXPECT_EQ(c.bos_token_id, 1);
}

TEST(Llama2c, Stories260KSpotValuesMatchFileBytes) {
  POSLENS_REQUIRE_STORIES();
  const fs::path p = stories_bin();
  Llama2cFile file(p.string());

  const at::Tensor w3 = file.load("layers.4.feed_forward.w3.weight");  // [172, 64]
  const int64_t w3_start = kW3 + 4 * kHidden * kDim;
  EXPECT_EQ(byte_of(w3_start), 995868u);
  EXPECT_EQ(w3[0][0].item<float>(), float_at(p, byte_of(w3_start)));
  EXPECT_EQ(w3[kHidden - 1][kDim - 1].item<float>(),
            float_at(p, byte_of(w3_start + kHidden * kDim - 1)));
  EXPECT_EQ(w3[17][5].item<float>(), float_at(p, byte_of(w3_start + 17 * kDim + 5)));

  const at::Tensor norm = file.load("norm.weight");
  EXPECT_EQ(byte_of(kRmsFinal), 1039900u);
  EXPECT_EQ(norm[0].item<float>(), float_at(p, byte_of(kRmsFinal)));
  EXPECT_EQ(norm[kDim - 1].item<float>(), float_at(p, byte_of(kRmsFinal + kDim - 1)));

  const at::Tensor emb = file.load("tok_embeddings.weight");
  EXPECT_EQ(emb[0][0].item<float>(), float_at(p, 28));
  EXPECT_EQ(emb[511][63].item<float>(), float_at(p, byte_of(kRmsAtt - 1)));

  const at::Tensor wk2 = file.load("layers.2.attention.wk.weight");  // [32, 64]
  EXPECT_EQ(wk2[31][63].item<float>(), float_at(p, byte_of(kWk + 3 * kKvDim * kDim - 1)));
  const at::Tensor w2_0 = file.load("layers.0.feed_forward.w2.weight");  // [64, 172]
  EXPECT_EQ(w2_0[1][0].item<float>(), float_at(p, byte_of(kW2 + kHidden)));
  const at::Tensor ffn3 = file.load("layers.3.ffn_norm.weight");
  EXPECT_EQ(ffn3[7].item<float>(), float_at(p, byte_of(kRmsFfn + 3 * kDim + 7)));

  // Trained RMSNorm gains are finite and not all zero; the weights are plausible numbers.
  EXPECT_TRUE(torch::isfinite(norm).all().item<bool>());
  EXPECT_GT(norm.abs().sum().item<float>(), 0.0f);
}

TEST(Llama2c, UnknownTensorNameThrows) {
  POSLENS_REQUIRE_STORIES();
  Llama2cFile file(stories_bin().string());
  for (const char* name : {"output.weight", "freq_cis_real", "layers.5.attention.wq.weight",
                           "layers.0.attention.wq", ""}) {
    try {
      (void)file.load(name);
      ADD_FAILURE() << "no error for " << name;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("no tensor named \"" + std::string(name) + "\""),
                std::string::npos)
          << e.what();
    }
  }
}

/// A tiny synthetic checkpoint whose k-th float is k, so every tensor's first element is its
/// float offset. vocab < 0: an unshared classifier follows the RoPE tables.
fs::path write_counting_file(const fs::path& dir, int32_t vocab) {
  const int32_t dim = 8, hidden = 12, layers = 2, heads = 2, kv = 1, seq = 4;
  const int64_t v = vocab < 0 ? -vocab : vocab;
  const int64_t kv_dim = dim * kv / heads, d_head = dim / heads;
  int64_t n = v * dim + layers * (dim + dim * dim + 2 * kv_dim * dim + dim * dim + dim +
                                  3 * hidden * dim) +
              dim + seq * d_head;
  if (vocab < 0) n += v * dim;
  std::vector<char> bytes(28 + 4 * static_cast<std::size_t>(n));
  const int32_t header[7] = {dim, hidden, layers, heads, kv, vocab, seq};
  std::memcpy(bytes.data(), header, 28);
  for (int64_t k = 0; k < n; ++k) {
    const float f = static_cast<float>(k);
    std::memcpy(bytes.data() + 28 + 4 * k, &f, 4);
  }
  const fs::path p = dir / "counting.bin";
  write_all(p, bytes);
  return p;
}

TEST(Llama2c, SyntheticUnsharedClassifierOffsets) {
  const fs::path p = write_counting_file(test::scratch_dir(), -10);
  Llama2cFile file(p.string());
  const ModelConfig c = llama2c_config(file.header());
  EXPECT_EQ(c.vocab_size, 10);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.d_head, 4);
  EXPECT_EQ(c.n_kv_heads, 1);
  EXPECT_EQ(c.n_ctx, 4);

  const auto& infos = file.tensors();
  ASSERT_EQ(infos.size(), 1u + 9 * 2 + 1 + 1);
  EXPECT_EQ(infos.back().name, "output.weight");
  EXPECT_EQ(infos.back().shape, (std::vector<int64_t>{10, 8}));

  // Expected float offsets computed by hand for dim=8, hidden=12, L=2, kv_dim=4, vocab=10.
  auto first = [&](const std::string& name) { return file.load(name).flatten()[0].item<float>(); };
  EXPECT_EQ(first("tok_embeddings.weight"), 0.0f);
  EXPECT_EQ(first("layers.0.attention_norm.weight"), 80.0f);
  EXPECT_EQ(first("layers.1.attention_norm.weight"), 88.0f);
  EXPECT_EQ(first("layers.0.attention.wq.weight"), 96.0f);
  EXPECT_EQ(first("layers.1.attention.wq.weight"), 160.0f);
  EXPECT_EQ(first("layers.0.attention.wk.weight"), 224.0f);
  EXPECT_EQ(first("layers.1.attention.wk.weight"), 256.0f);
  EXPECT_EQ(first("layers.0.attention.wv.weight"), 288.0f);
  EXPECT_EQ(first("layers.0.attention.wo.weight"), 352.0f);
  EXPECT_EQ(first("layers.0.ffn_norm.weight"), 480.0f);
  EXPECT_EQ(first("layers.0.feed_forward.w1.weight"), 496.0f);
  EXPECT_EQ(first("layers.1.feed_forward.w1.weight"), 592.0f);
  EXPECT_EQ(first("layers.0.feed_forward.w2.weight"), 688.0f);
  EXPECT_EQ(first("layers.0.feed_forward.w3.weight"), 880.0f);
  EXPECT_EQ(first("norm.weight"), 1072.0f);
  // RoPE tables: 2 * seq_len * d_head/2 = 16 floats at 1080..1095, then the classifier.
  EXPECT_EQ(first("output.weight"), 1096.0f);
  const at::Tensor out = file.load("output.weight");
  EXPECT_EQ(out[9][7].item<float>(), 1096.0f + 79.0f);
  // [out, in] as stored: row-major, element [r][c] at r*in + c.
  EXPECT_EQ(file.load("layers.0.feed_forward.w2.weight")[1][2].item<float>(), 688.0f + 12 + 2);
}

TEST(Llama2c, SyntheticSharedClassifierHasNoOutputWeight) {
  const fs::path p = write_counting_file(test::scratch_dir(), 10);
  Llama2cFile file(p.string());
  EXPECT_TRUE(file.header().shared_classifier);
  EXPECT_EQ(file.tensors().back().name, "norm.weight");
  EXPECT_THROW((void)file.load("output.weight"), Error);
}

// ---- broken files -----------------------------------------------------------------------------

class Llama2cBroken : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(stories_bin())) POSLENS_MISSING_PREREQUISITE("fixture absent: " << stories_bin());
    bytes_ = read_all(stories_bin());
    ASSERT_EQ(bytes_.size(), 1056540u);
    dir_ = test::scratch_dir();
  }
  fs::path write(const std::string& name) {
    const fs::path p = dir_ / name;
    write_all(p, bytes_);
    return p;
  }
  std::vector<char> bytes_;
  fs::path dir_;
};

constexpr const char* kStoriesHeader =
    "llama2.c header (dim=64, hidden_dim=172, n_layers=5, n_heads=8, n_kv_heads=4, "
    "vocab_size=512, seq_len=512)";

TEST_F(Llama2cBroken, TruncatedBy100Bytes) {
  bytes_.resize(bytes_.size() - 100);
  const fs::path p = write("truncated.bin");
  const std::string msg = open_error(p);
  EXPECT_EQ(msg, p.string() + ": " + kStoriesHeader +
                     " implies 1056540 bytes, file has 1056440 (truncated?)");
}

TEST_F(Llama2cBroken, HeaderOnly) {
  bytes_.resize(28);
  const std::string msg = open_error(write("header_only.bin"));
  EXPECT_NE(msg.find("implies 1056540 bytes, file has 28 (truncated?)"), std::string::npos) << msg;
}

TEST_F(Llama2cBroken, TenByteFile) {
  bytes_.resize(10);
  const fs::path p = write("ten.bin");
  EXPECT_EQ(open_error(p), p.string() + ": file has 10 bytes, shorter than the 28-byte llama2.c header");
}

TEST_F(Llama2cBroken, EmptyFile) {
  bytes_.clear();
  EXPECT_NE(open_error(write("empty.bin")).find("file has 0 bytes"), std::string::npos);
}

TEST_F(Llama2cBroken, ZeroHeads) {
  set_header_field(bytes_, 3, 0);
  const std::string msg = open_error(write("zero_heads.bin"));
  EXPECT_NE(msg.find("header field n_heads=0 must be positive"), std::string::npos) << msg;
}

TEST_F(Llama2cBroken, NegativeLayers) {
  set_header_field(bytes_, 2, -5);
  const std::string msg = open_error(write("neg_layers.bin"));
  EXPECT_NE(msg.find("header field n_layers=-5 must be positive"), std::string::npos) << msg;
}

TEST_F(Llama2cBroken, ZeroVocab) {
  set_header_field(bytes_, 5, 0);
  const std::string msg = open_error(write("zero_vocab.bin"));
  EXPECT_NE(msg.find("header field vocab_size=0 must be non-zero"), std::string::npos) << msg;
}

TEST_F(Llama2cBroken, HeadsNotDividingDim) {
  set_header_field(bytes_, 3, 7);
  const std::string msg = open_error(write("heads7.bin"));
  EXPECT_NE(msg.find("dim=64 is not divisible by n_heads=7"), std::string::npos) << msg;
}

TEST_F(Llama2cBroken, KvHeadsNotDividingHeads) {
  set_header_field(bytes_, 4, 3);
  const std::string msg = open_error(write("kv3.bin"));
  EXPECT_NE(msg.find("n_heads=8 is not divisible by n_kv_heads=3"), std::string::npos) << msg;
}

TEST_F(Llama2cBroken, OddHeadDim) {
  set_header_field(bytes_, 0, 24);  // d_head = 24 / 8 = 3
  const std::string msg = open_error(write("odd.bin"));
  EXPECT_NE(msg.find("d_head=dim/n_heads=3, which must be even"), std::string::npos) << msg;
}

TEST_F(Llama2cBroken, AbsurdDim) {
  set_header_field(bytes_, 0, 1 << 30);
  const std::string msg = open_error(write("absurd.bin"));
  EXPECT_NE(msg.find("header field dim=1073741824 exceeds the limit 1048576"), std::string::npos)
      << msg;
}

TEST_F(Llama2cBroken, LargestFieldsOverflowIsReported) {
  for (int f = 0; f < 7; ++f) set_header_field(bytes_, f, 1 << 20);
  set_header_field(bytes_, 3, 1 << 19);     // n_heads: d_head = 2
  set_header_field(bytes_, 4, 1 << 19);     // n_kv_heads
  set_header_field(bytes_, 5, -(1 << 20));  // unshared classifier: the largest layout
  // About 28 * 2^60 bytes: more than a uint64 holds, reported rather than wrapped around.
  const std::string msg = open_error(write("huge.bin"));
  EXPECT_NE(msg.find("implies more than 2^64 bytes, file has 1056540 (truncated?)"),
            std::string::npos)
      << msg;
}

TEST_F(Llama2cBroken, LargeButRepresentableSize) {
  set_header_field(bytes_, 0, 1 << 20);  // dim
  set_header_field(bytes_, 1, 1 << 20);  // hidden_dim
  set_header_field(bytes_, 2, 1);        // n_layers
  set_header_field(bytes_, 3, 1 << 19);  // n_heads: d_head = 2
  set_header_field(bytes_, 4, 1 << 19);  // n_kv_heads
  set_header_field(bytes_, 5, 1 << 20);  // vocab
  set_header_field(bytes_, 6, 1 << 20);  // seq_len
  // floats: 2^40 + (2^20 + 4*2^40 + 2^20 + 3*2^40) + 2^20 + 2*2^20*1 = 8*2^40 + 5*2^20
  const std::string msg = open_error(write("large.bin"));
  EXPECT_NE(msg.find("implies 35184393060380 bytes, file has 1056540 (truncated?)"),
            std::string::npos)
      << msg;
}

TEST_F(Llama2cBroken, ExtraTrailingBytes) {
  bytes_.resize(bytes_.size() + 16, '\0');
  const fs::path p = write("extra.bin");
  EXPECT_EQ(open_error(p), p.string() + ": " + kStoriesHeader +
                               " implies 1056540 bytes, file has 1056556 (16 extra bytes after "
                               "the weights)");
}

TEST_F(Llama2cBroken, UnsharedFlagWithoutClassifier) {
  set_header_field(bytes_, 5, -512);  // claims an output.weight the file does not hold
  const std::string msg = open_error(write("unshared.bin"));
  EXPECT_NE(msg.find("implies 1187612 bytes, file has 1056540 (truncated?)"), std::string::npos)
      << msg;
}

TEST_F(Llama2cBroken, Version1Magic) {
  const uint32_t magic = 0x616b3432u;
  std::memcpy(bytes_.data(), &magic, 4);
  const std::string msg = open_error(write("v1.bin"));
  EXPECT_NE(msg.find("version-1+ export"), std::string::npos) << msg;
}

TEST(Llama2c, MissingFileAndDirectory) {
  const fs::path dir = test::scratch_dir();
  EXPECT_NE(open_error(dir / "nope.bin").find("cannot open"), std::string::npos);
  EXPECT_NE(open_error(dir).find("not a regular file"), std::string::npos);
}

}  // namespace
}  // namespace poslens
