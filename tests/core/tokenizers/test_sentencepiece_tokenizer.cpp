// SentencePieceTokenizer on hand-made models (the BPE rule, user-defined and unused pieces,
// unknown runs, whitespace rules, the interface), and on hostile files: truncations, flipped
// bytes, huge length claims, broken vocabularies. Every broken file gives one poslens::Error
// naming the file and the field; nothing crashes.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/tokenizers/sentencepiece_model.h"
#include "core/tokenizers/sentencepiece_tokenizer.h"
#include "fixtures.h"

namespace poslens {
namespace {

namespace fs = std::filesystem;
using test::Contains;
using test::error_of;
using Ids = std::vector<int64_t>;
using Type = SentencePieceEntry::Type;

// --- A tiny protobuf writer for hand-made ModelProtos ---------------------------------------

void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void tag(std::string& out, uint32_t field, int wire) { varint(out, (uint64_t{field} << 3) | wire); }
void field_varint(std::string& out, uint32_t field, uint64_t v) {
  tag(out, field, 0);
  varint(out, v);
}
void field_bytes(std::string& out, uint32_t field, const std::string& b) {
  tag(out, field, 2);
  varint(out, b.size());
  out += b;
}
void field_float(std::string& out, uint32_t field, float f) {
  tag(out, field, 5);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((u >> (8 * i)) & 0xFF));
}

struct ModelWriter {
  std::string pieces;
  std::string trainer;
  std::string normalizer;
  ModelWriter& piece(const std::string& p, float score, Type type = Type::Normal) {
    std::string m;
    field_bytes(m, 1, p);
    field_float(m, 2, score);
    if (type != Type::Normal) field_varint(m, 3, static_cast<uint64_t>(type));
    field_bytes(pieces, 1, m);
    return *this;
  }
  /// <unk>, <s>, </s> as SentencePiece puts them first.
  ModelWriter& specials() {
    return piece("<unk>", 0, Type::Unknown).piece("<s>", 0, Type::Control).piece("</s>", 0, Type::Control);
  }
  ModelWriter& bytes256() {
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      piece(name, 0, Type::Byte);
    }
    return *this;
  }
  std::string build(int model_type = 2, bool byte_fallback = false, bool remove_ws = false) const {
    std::string t = trainer;
    field_varint(t, 3, static_cast<uint64_t>(model_type));
    if (byte_fallback) field_varint(t, 35, 1);
    std::string n = normalizer;
    field_bytes(n, 1, "identity");
    field_varint(n, 3, 1);
    field_varint(n, 4, remove_ws ? 1 : 0);
    std::string out = pieces;
    field_bytes(out, 2, t);
    field_bytes(out, 3, n);
    return out;
  }
};

std::unique_ptr<SentencePieceTokenizer> load(const std::string& bytes) {
  return SentencePieceTokenizer::from_bytes(bytes, "hand.model");
}

const std::string kSp = "\xE2\x96\x81";  // ▁

// --- Encoding rules --------------------------------------------------------------------------

TEST(SentencePieceTokenizer, BpeMergesByPieceScoreNotByMergeList) {
  // "▁abc": pairs ▁a (score -5) and bc (-1) exist; bc merges first (higher score), then
  // ▁a; "▁abc" itself only forms from ▁a + bc.
  ModelWriter w;
  w.specials()
      .piece(kSp, -10)
      .piece("a", -10)
      .piece("b", -10)
      .piece("c", -10)
      .piece(kSp + "a", -5)
      .piece("bc", -1)
      .piece("ab", -0.5)  // ab beats bc, so "▁a|bc" never forms: ▁ + ab + c
      .piece(kSp + "abc", -20);
  const auto tok = load(w.build());
  // ab (-0.5) first: ▁, ab, c; then ▁ab? not a piece; abc? not a piece.
  EXPECT_EQ(tok->encode("abc", false), (Ids{3, 9, 6}));
  EXPECT_EQ(tok->encode("abc", true), (Ids{1, 3, 9, 6}));
  EXPECT_EQ(tok->decode({1, 3, 9, 6}), "abc");
  // "bc" alone: ▁ b c -> bc (-1) -> ▁, bc
  EXPECT_EQ(tok->encode("bc", false), (Ids{3, 8}));
}

TEST(SentencePieceTokenizer, UserDefinedPiecesAreMatchedFirstAndNeverMerged) {
  ModelWriter w;
  w.specials()
      .piece(kSp, -10)
      .piece("a", -10)
      .piece("<x>", 0, Type::UserDefined)
      .piece("a<", -1)
      .piece(kSp + "a", -2);
  const auto tok = load(w.build());
  // "a<x>a": ▁ a <x> a; "a<" would merge but <x> is frozen.
  EXPECT_EQ(tok->encode("a<x>a", false), (Ids{7, 5, 4}));
  const Encoding e = tok->encode_full("a<x>a", false);
  EXPECT_EQ(e.tokens, (std::vector<std::string>{kSp + "a", "<x>", "a"}));
  EXPECT_EQ(e.offsets, (std::vector<std::pair<size_t, size_t>>{{0, 1}, {1, 4}, {4, 5}}));
}

TEST(SentencePieceTokenizer, UnknownRunsBecomeOneUnkWithoutByteFallback) {
  ModelWriter w;
  w.specials().piece(kSp, -1).piece("a", -1);
  const auto tok = load(w.build());
  EXPECT_EQ(tok->encode("axyz a", false), (Ids{3, 4, 0, 3, 4}));
  const Encoding e = tok->encode_full("axyz a", false);
  EXPECT_EQ(e.offsets[2], (std::pair<size_t, size_t>{1, 4}));
  EXPECT_EQ(tok->decode({3, 4, 0, 3, 4}), "a \xE2\x81\x87  a");
  EXPECT_EQ(tok->token_text(0), "<unk>");
}

TEST(SentencePieceTokenizer, ByteFallbackSpellsUnknownCharactersInBytes) {
  ModelWriter w;
  w.specials().bytes256().piece(kSp, -1).piece("a", -1);
  const auto tok = load(w.build(2, true));
  // "é" = C3 A9 -> <0xC3> <0xA9> (ids 3 + byte)
  EXPECT_EQ(tok->encode("\xC3\xA9", false), (Ids{259, 3 + 0xC3, 3 + 0xA9}));
  const Encoding e = tok->encode_full("a\xC3\xA9", false);
  EXPECT_EQ(e.tokens, (std::vector<std::string>{kSp, "a", "<0xC3>", "<0xA9>"}));
  EXPECT_EQ(e.offsets, (std::vector<std::pair<size_t, size_t>>{{0, 0}, {0, 1}, {1, 3}, {1, 3}}));
  EXPECT_EQ(tok->decode(e.ids), "a\xC3\xA9");
  EXPECT_EQ(tok->token_text(3 + 0x0A), "\n");
  EXPECT_EQ(tok->piece(3 + 0x0A), "<0x0A>");
  // A lone continuation byte decodes as U+FFFD; malformed input encodes as U+FFFD's bytes.
  EXPECT_EQ(tok->decode({3 + 0xA9}), "\xEF\xBF\xBD");
  EXPECT_EQ(tok->encode("\xFF", false), (Ids{259, 3 + 0xEF, 3 + 0xBF, 3 + 0xBD}));
}

TEST(SentencePieceTokenizer, RemoveExtraWhitespaces) {
  ModelWriter w;
  w.specials().piece(kSp, -1).piece("a", -1).piece("b", -1);
  const auto tok = load(w.build(2, false, true));
  EXPECT_EQ(tok->encode("  a   b  ", false), (Ids{3, 4, 3, 5}));
  EXPECT_EQ(tok->encode("   ", false), Ids{});
  EXPECT_EQ(tok->decode({3, 4, 3, 5}), "a b");
}

TEST(SentencePieceTokenizer, InterfaceBasics) {
  ModelWriter w;
  w.specials().piece(kSp + "the", -1).piece("x", -1, Type::Unused);
  const auto tok = load(w.build());
  EXPECT_EQ(tok->vocab_size(), 5);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_EQ(tok->special_ids(), (Ids{0, 1, 2, 4}));
  EXPECT_EQ(tok->token_text(3), " the");
  EXPECT_EQ(tok->piece(3), kSp + "the");
  EXPECT_EQ(tok->describe(), "SentencePiece BPE tokenizer.model, 5 pieces (normalizer identity)");
  EXPECT_TRUE(Contains(error_of([&] { tok->piece(5); }), "hand.model: piece: token id 5 is outside"));
  EXPECT_TRUE(Contains(error_of([&] { tok->decode({-1}); }), "decode: token id -1"));
  EXPECT_EQ(tok->encode("", true), (Ids{1}));
  EXPECT_EQ(tok->encode("", false), Ids{});
}

// --- Broken vocabularies ----------------------------------------------------------------------

TEST(SentencePieceTokenizer, BrokenVocabulariesNameTheField) {
  {
    ModelWriter w;
    w.piece("a", 0);
    EXPECT_TRUE(Contains(error_of([&] { load(w.build()); }),
                         "hand.model: ModelProto.pieces: no piece of type UNKNOWN"));
  }
  {
    ModelWriter w;
    w.specials().piece("a", 0).piece("a", 1);
    EXPECT_TRUE(Contains(error_of([&] { load(w.build()); }),
                         "ModelProto.pieces[4].piece: \"a\" is already piece 3"));
  }
  {
    ModelWriter w;
    w.specials().piece("", 0);
    EXPECT_TRUE(Contains(error_of([&] { load(w.build()); }), "pieces[3].piece: empty piece"));
  }
  {
    ModelWriter w;
    w.specials().piece("<0x41>", 0, Type::Byte);
    EXPECT_TRUE(Contains(error_of([&] { load(w.build()); }),
                         "byte piece \"<0x41>\" although trainer_spec.byte_fallback is false"));
    EXPECT_TRUE(Contains(error_of([&] { load(w.build(2, true)); }),
                         "byte_fallback is true but byte piece <0x00> is missing"));
  }
  {
    ModelWriter w;
    w.specials();
    EXPECT_TRUE(Contains(error_of([&] { load(w.build(7)); }),
                         "hand.model: ModelProto.trainer_spec: model_type: 7 is not a "
                         "SentencePiece model type"));
  }
  {
    std::string m;
    field_bytes(m, 1, "a");
    field_varint(m, 3, 9);
    std::string bytes;
    field_bytes(bytes, 1, m);
    EXPECT_TRUE(Contains(error_of([&] { load(bytes); }),
                         "ModelProto.pieces[0]: type: 9 is not a SentencePiece piece type"));
  }
  {
    std::string m;
    field_varint(m, 1, 5);  // piece as a varint
    std::string bytes;
    field_bytes(bytes, 1, m);
    EXPECT_TRUE(Contains(error_of([&] { load(bytes); }),
                         "hand.model: ModelProto.pieces[0]: piece (field 1): expected wire type "
                         "length-delimited, found varint"));
  }
  {
    std::string bytes;
    field_varint(bytes, 2, 5);  // trainer_spec as a varint
    EXPECT_TRUE(Contains(error_of([&] { load(bytes); }), "trainer_spec (field 2): expected wire type"));
  }
  {
    ModelWriter w;
    w.specials();
    std::string n;
    field_bytes(n, 2, std::string("\xff\xff\x00\x00xxxx", 8));  // trie size past the blob
    w.normalizer = n;
    EXPECT_TRUE(Contains(error_of([&] { load(w.build()); }),
                         "normalizer_spec.precompiled_charsmap (normalizer \"identity\"): trie "
                         "size 65535 runs past the 8-byte blob"));
  }
  EXPECT_TRUE(Contains(error_of([&] { load(""); }), "hand.model: empty file"));
  EXPECT_TRUE(Contains(error_of([&] { load(std::string("\x0a\x01", 2)); }),
                       "hand.model: ModelProto: field 1: length 1 runs past the end"));
  EXPECT_TRUE(Contains(error_of([&] { SentencePieceTokenizer::read("/nonexistent/tokenizer.model"); }),
                       "/nonexistent/tokenizer.model"));
}

// --- Hostile versions of the real files --------------------------------------------------------

fs::path fixture(const std::string& name) {
  return test::fixtures_dir() / "tokenizers" / name / "tokenizer.model";
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// Loads `bytes`; on success also encodes and decodes a varied text (broken charsmaps and
/// vocabularies must not crash there either). Returns the error message, or "" if it loaded.
std::string try_load(const std::string& bytes) {
  try {
    const auto tok = SentencePieceTokenizer::from_bytes(bytes, "hostile.model");
    const std::string text = "Héllo  wörld 😀 中文 \t 123 <s>\xFF";
    const Encoding e = tok->encode_full(text, true);
    for (const auto& [b, end] : e.offsets) EXPECT_LE(b, end);
    for (const int64_t id : e.ids) EXPECT_LT(id, tok->vocab_size());
    tok->decode(e.ids);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

TEST(SentencePieceHostile, TruncationsEveryNth) {
  for (const std::string name : {"llama2", "tiny-spm"}) {
    if (!fs::exists(fixture(name))) POSLENS_MISSING_PREREQUISITE("fixture absent: " << fixture(name));
    const std::string full = slurp(fixture(name));
    int errors = 0, loaded = 0;
    for (std::size_t n = 0; n < full.size(); n += 997) {
      const std::string e = try_load(full.substr(0, n));
      if (e.empty()) {
        ++loaded;
      } else {
        ++errors;
        EXPECT_TRUE(Contains(e, "hostile.model"));
      }
    }
    // Pieces come first and a cut inside them leaves BYTE pieces without byte_fallback, or a
    // length past the end: every cut is an error.
    EXPECT_EQ(loaded, 0) << name;
    EXPECT_GT(errors, 200) << name;
  }
}

TEST(SentencePieceHostile, FlippedBytesNeverCrash) {
  for (const std::string name : {"llama2", "tiny-spm"}) {
    if (!fs::exists(fixture(name))) POSLENS_MISSING_PREREQUISITE("fixture absent: " << fixture(name));
    const std::string full = slurp(fixture(name));
    std::mt19937 rng(1234);
    std::uniform_int_distribution<std::size_t> pos(0, full.size() - 1);
    std::uniform_int_distribution<int> val(0, 255);
    int errors = 0;
    for (int trial = 0; trial < 150; ++trial) {
      std::string bytes = full;
      const int flips = 1 + trial % 8;
      for (int k = 0; k < flips; ++k) bytes[pos(rng)] = static_cast<char>(val(rng));
      const std::string e = try_load(bytes);
      if (e.empty()) continue;  // loaded, encoded and decoded without harm
      ++errors;
      EXPECT_TRUE(Contains(e, "hostile.model")) << "the message names the file: " << e;
    }
    // Some flips hit structure the reader checks (lengths, tags, UTF-8): rejected, each with
    // one message naming the file; the rest loaded and encoded a hostile text in range.
    EXPECT_GT(errors, 0) << name << ": no flipped file was rejected";
    std::cout << "[ hostile ] " << name << ": " << errors
              << " of 150 flipped files rejected, the rest loaded and encoded\n";
  }
}

TEST(SentencePieceHostile, HugeLengthClaims) {
  // A piece message claiming 2^62 bytes; a ModelProto whose first field claims 4 GiB.
  std::string bytes;
  tag(bytes, 1, 2);
  varint(bytes, uint64_t{1} << 62);
  bytes += "abc";
  EXPECT_TRUE(Contains(try_load(bytes), "field 1: length 4611686018427387904 runs past the end"));
  if (!fs::exists(fixture("llama2"))) POSLENS_MISSING_PREREQUISITE("fixture absent");
  std::string full = slurp(fixture("llama2"));
  // Overwrite the first piece's length varint with a 5-byte claim of ~4 GiB.
  const std::string claim("\xff\xff\xff\xff\x0f", 5);
  full.replace(1, 1, claim);
  EXPECT_TRUE(Contains(try_load(full), "runs past the end"));
}

}  // namespace
}  // namespace poslens
