// Tests of the llama2.c tokenizer (core/llama2c_tokenizer.h): the real tok512.bin of
// stories260K, small synthetic vocabularies for the merge rule, and broken files.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/base/error.h"
#include "core/tokenizers/llama2c_tokenizer.h"
#include "fixtures.h"

namespace poslens {
namespace {

namespace fs = std::filesystem;
using Ids = std::vector<int64_t>;

/// A string of every byte of a literal (embedded NULs included).
template <std::size_t N>
std::string bytes(const char (&s)[N]) {
  return std::string(s, N - 1);
}

fs::path tok512() { return test::stories_dir() / "tok512.bin"; }

/// Bytes of a tokenizer file: int32 max_token_length, then (float32 score, int32 length, bytes).
struct TokFileWriter {
  std::vector<char> bytes;
  explicit TokFileWriter(int32_t max_len) { put(&max_len, 4); }
  void put(const void* p, std::size_t n) {
    const char* c = static_cast<const char*>(p);
    bytes.insert(bytes.end(), c, c + n);
  }
  TokFileWriter& token(const std::string& piece, float score, int32_t len = -1) {
    if (len == -1) len = static_cast<int32_t>(piece.size());
    put(&score, 4);
    put(&len, 4);
    put(piece.data(), piece.size());
    return *this;
  }
  fs::path write(const fs::path& p) const {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return p;
  }
};

/// A vocabulary without byte fallback: <unk>, BOS, EOS, then the given pieces from id 3.
Llama2cTokenizer small_tokenizer(const std::vector<std::pair<std::string, float>>& pieces) {
  TokFileWriter w(8);
  w.token("<unk>", 0).token("\n<s>\n", 0).token("\n</s>\n", 0);
  for (const auto& [piece, score] : pieces) w.token(piece, score);
  const fs::path p = w.write(test::scratch_dir() / "small.bin");
  return Llama2cTokenizer(p.string(), 3 + static_cast<int64_t>(pieces.size()));
}

std::string tokenizer_error(const fs::path& p, int64_t vocab_size) {
  try {
    Llama2cTokenizer tok(p.string(), vocab_size);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no poslens::Error for " << p;
  return {};
}

// ---- the real tok512.bin ----------------------------------------------------------------------

class Tok512 : public ::testing::Test {
 protected:
  void SetUp() override {
    POSLENS_REQUIRE_STORIES();
    tok_ = std::make_unique<Llama2cTokenizer>(tok512().string(), 512);
  }
  std::unique_ptr<Llama2cTokenizer> tok_;
};

TEST_F(Tok512, SpecialTokensAndSize) {
  EXPECT_EQ(tok_->vocab_size(), 512);
  EXPECT_EQ(tok_->bos_id(), 1);
  EXPECT_EQ(tok_->eos_id(), 2);
  EXPECT_EQ(tok_->token_text(0), "<unk>");
  EXPECT_EQ(tok_->token_text(1), "\n<s>\n");
  EXPECT_EQ(tok_->token_text(2), "\n</s>\n");
  // Byte-fallback pieces <0xXX> (ids 3..258) come back as the raw byte.
  EXPECT_EQ(tok_->token_text(3), std::string(1, '\0'));
  EXPECT_EQ(tok_->token_text(3 + 'A'), "A");
  EXPECT_EQ(tok_->token_text(258), std::string(1, static_cast<char>(0xFF)));
  // Merged pieces: llama2.c's export already turned sentencepiece's "▁" into a space.
  EXPECT_EQ(tok_->token_text(259), " t");
  EXPECT_EQ(tok_->token_text(260), "he");
}

TEST_F(Tok512, TokenTextOutOfRangeThrows) {
  for (int64_t id : {int64_t{-1}, int64_t{512}, int64_t{1} << 40}) {
    try {
      (void)tok_->token_text(id);
      ADD_FAILURE() << "no error for " << id;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("token id " + std::to_string(id) +
                                           " is outside the vocabulary [0, 512)"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST_F(Tok512, OnceUponATime) {
  // Dummy prefix " " + O n c e " " u p o n " " a " " t i m e, merged by score into four
  // word pieces, each carrying its leading space.
  const Ids ids = tok_->encode("Once upon a time", true);
  EXPECT_EQ(ids, (Ids{1, 403, 407, 261, 378}));
  EXPECT_EQ(tok_->token_text(403), " Once");
  EXPECT_EQ(tok_->token_text(407), " upon");
  EXPECT_EQ(tok_->token_text(261), " a");
  EXPECT_EQ(tok_->token_text(378), " time");
  EXPECT_EQ(tok_->decode(ids), "Once upon a time");
}

TEST_F(Tok512, WithoutBosTheDummyPrefixSpaceStays) {
  const Ids ids = tok_->encode("Once upon a time", false);
  EXPECT_EQ(ids, (Ids{403, 407, 261, 378}));
  // run.c strips a piece's leading space only right after BOS.
  EXPECT_EQ(tok_->decode(ids), " Once upon a time");
}

TEST_F(Tok512, EmptyText) {
  EXPECT_EQ(tok_->encode("", true), (Ids{1}));
  EXPECT_TRUE(tok_->encode("", false).empty());
  EXPECT_EQ(tok_->decode({}), "");
  EXPECT_EQ(tok_->decode({1}), "");
  EXPECT_EQ(tok_->decode({1, 2}), "");
}

TEST_F(Tok512, PunctuationDigitsAndByteFallback) {
  // Ids from a direct transcription of run.c's encode loop.
  EXPECT_EQ(tok_->encode("Hello, world! 123 + 4.5 = 127.5?", true),
            (Ids{1,   346, 306, 414, 432, 263, 304, 341, 443, 410, 475, 479, 472, 410,
                 496, 410, 484, 426, 480, 410, 64,  410, 475, 479, 491, 426, 480, 450}));
  // "é" is a piece of its own; "☃" (E2 98 83) is not, so it falls back to bytes + 3.
  const Ids cafe = tok_->encode("café ☃", true);
  EXPECT_EQ(cafe, (Ids{1, 280, 412, 431, 485, 410, 0xE2 + 3, 0x98 + 3, 0x83 + 3}));
  EXPECT_EQ(tok_->decode(cafe), "café ☃");
}

TEST_F(Tok512, RoundTrips) {
  const std::string texts[] = {
      "Once upon a time, there was a little girl named Lily. She loved to play outside.",
      "\"Why?\" asked Tom. 'Because!' said Mom; (it's 3:45 pm) -- 100% sure...",
      "Numbers: 0 1 2 3 4 5 6 7 8 9 10 42 3.14159 -7 1e10",
      "Tabs\tand\nnew lines\r\n  double  spaces   ",
      "café ☃ naïve Zürich 日本語 🙂",
      " leading space",
      "x",
      "ABCDEFGHIJKLMNOPQRSTUVWXYZ abcdefghijklmnopqrstuvwxyz ~`!@#$%^&*()_+-={}[]|\\:;<>,./?",
  };
  for (const std::string& s : texts) {
    SCOPED_TRACE(s);
    const Ids ids = tok_->encode(s, true);
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(ids.front(), 1);
    for (int64_t id : ids) {
      EXPECT_GE(id, 0);
      EXPECT_LT(id, 512);
    }
    EXPECT_EQ(tok_->decode(ids), s);
    // Without BOS the only difference is the dummy-prefix space kept at the front.
    EXPECT_EQ(tok_->decode(tok_->encode(s, false)), " " + s);
  }
}

TEST_F(Tok512, InvalidUtf8FallsBackToBytes) {
  const std::string texts[] = {
      bytes("\xff\xfe abc"),
      bytes("lone \x80\x80\x80\x80\x80\x80 continuation"),
      bytes("cut \xc3"),
      bytes("\xe2\x98"),
      bytes("nul\0inside"),
      bytes("\xf0\x9f\x99\x82\x80"),  // an emoji followed by a stray continuation byte
      bytes("\xc3\xa9\xa9\xa9\xa9z"),  // "é" with too many continuation bytes
  };
  for (const std::string& s : texts) {
    SCOPED_TRACE(::testing::PrintToString(s));
    const Ids ids = tok_->encode(s, true);
    EXPECT_EQ(tok_->decode(ids), s);
  }
  EXPECT_EQ(tok_->encode(std::string("\xff", 1), false), (Ids{tok_->encode(" ", false)[0], 0xFF + 3}));
}

TEST_F(Tok512, DecodeRules) {
  // BOS and EOS give no text; a leading space is stripped only right after BOS.
  EXPECT_EQ(tok_->decode({403, 407}), " Once upon");
  EXPECT_EQ(tok_->decode({1, 403, 2, 407}), "Once upon");
  EXPECT_EQ(tok_->decode({1, 403, 1, 407}), "Onceupon");
  EXPECT_EQ(tok_->decode({3 + 'h', 3 + 'i'}), "hi");
  EXPECT_EQ(tok_->decode({0}), "<unk>");
  EXPECT_THROW((void)tok_->decode({1, 512}), Error);
  EXPECT_THROW((void)tok_->decode({-3}), Error);
}

TEST_F(Tok512, LongTextRoundTripsQuickly) {
  // ~46k characters: the merge loop must not be quadratic in the text length.
  const std::string sentence = "The cat sat on the mat.";
  std::string text;
  for (int i = 0; i < 2000; ++i) text += sentence;
  const Ids many = tok_->encode(text, false);
  EXPECT_EQ(tok_->decode(many), " " + text);
  EXPECT_GT(many.size(), 2000u);
  EXPECT_LT(many.size(), text.size());
}

// ---- the merge rule on small vocabularies -----------------------------------------------------

TEST(Llama2cTokenizerMerge, HighestScoreFirst) {
  // Ids: 3 " ", 4 "a", 5 "b", 6 "ab", 7 "ba", 8 " a".
  {
    auto tok = small_tokenizer({{" ", 0}, {"a", 0}, {"b", 0}, {"ab", -1}, {"ba", -2}, {" a", -5}});
    // " a b a": " a"(-5), "ab"(-1), "ba"(-2) -> "ab" first; then " "+"ab" none, "ab"+"a" none.
    EXPECT_EQ(tok.encode("aba", false), (Ids{3, 6, 4}));
  }
  {
    auto tok = small_tokenizer({{" ", 0}, {"a", 0}, {"b", 0}, {"ab", -2}, {"ba", -1}, {" a", -5}});
    // "ba"(-1) wins -> " ", "a", "ba"; then " a"(-5) -> " a", "ba".
    EXPECT_EQ(tok.encode("aba", false), (Ids{8, 7}));
  }
}

TEST(Llama2cTokenizerMerge, TiesGoToTheLeftmostPair) {
  auto tok = small_tokenizer({{" ", 0}, {"a", 0}, {"aa", -1}, {"aaa", -3}});
  // " a a a": "aa" at positions 1 and 2 tie -> the left one merges: " ", "aa", "a" -> "aaa".
  EXPECT_EQ(tok.encode("aaa", false), (Ids{3, 6}));
  // Four a's: " ", "aa", "a", "a"; then "aa" (-1) beats "aaa" (-3): " ", "aa", "aa".
  EXPECT_EQ(tok.encode("aaaa", false), (Ids{3, 5, 5}));
}

TEST(Llama2cTokenizerMerge, MergesChainAndFirstDuplicateWins) {
  // Ids: 3 " ", 4 "a", 5 "b", 6 "ab" (-1), 7 " ab" (-2), 8 "ab" (+5, a duplicate), 9 "c",
  // 10 "bc" (0). The lookup of "ab" uses the first id (6), so its score is -1, not +5.
  auto tok = small_tokenizer({{" ", 0}, {"a", 0}, {"b", 0}, {"ab", -1}, {" ab", -2}, {"ab", 5},
                              {"c", 0}, {"bc", 0}});
  // " ", "a", "b": "ab" (6) then " ab" (7): merges chain.
  EXPECT_EQ(tok.encode("ab", false), (Ids{7}));
  // " ", "a", "b", "c": "bc" (0) beats "ab" (-1); with +5 for "ab" it would give {7, 9}.
  EXPECT_EQ(tok.encode("abc", false), (Ids{3, 4, 10}));
  EXPECT_EQ(tok.decode({1, 3, 4, 10}), "abc");
  EXPECT_EQ(tok.token_text(8), "ab");
}

TEST(Llama2cTokenizerMerge, NoByteFallbackTokenThrows) {
  auto tok = small_tokenizer({{" ", 0}, {"a", 0}});
  EXPECT_EQ(tok.encode("a", true), (Ids{1, 3, 4}));
  try {
    (void)tok.encode("az", true);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot encode byte 0x7a"), std::string::npos)
        << e.what();
  }
}

// ---- broken files -----------------------------------------------------------------------------

TEST(Llama2cTokenizerBroken, TruncatedTok512) {
  POSLENS_REQUIRE_STORIES();
  std::ifstream in(tok512(), std::ios::binary);
  std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  ASSERT_EQ(bytes.size(), 6227u);
  bytes.resize(bytes.size() - 3);  // cuts into the text of the last token
  const fs::path p = test::scratch_dir() / "tok_truncated.bin";
  std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  const std::string msg = tokenizer_error(p, 512);
  EXPECT_NE(msg.find(p.string() + ": truncated at token 511 of 512"), std::string::npos) << msg;
}

TEST(Llama2cTokenizerBroken, VocabSizeLargerThanFile) {
  POSLENS_REQUIRE_STORIES();
  const std::string msg = tokenizer_error(tok512(), 513);
  EXPECT_NE(msg.find("truncated at token 512 of 513"), std::string::npos) << msg;
  EXPECT_NE(msg.find("needs 8 bytes for score and length"), std::string::npos) << msg;
}

TEST(Llama2cTokenizerBroken, VocabSizeSmallerThanFile) {
  POSLENS_REQUIRE_STORIES();
  const std::string msg = tokenizer_error(tok512(), 500);
  EXPECT_NE(msg.find(tok512().string() + ": "), std::string::npos) << msg;
  EXPECT_NE(msg.find("extra bytes after token 499"), std::string::npos) << msg;
}

TEST(Llama2cTokenizerBroken, TrailingBytes) {
  TokFileWriter w(8);
  w.token("<unk>", 0).token("\n<s>\n", 0).token("\n</s>\n", 0);
  w.put("xyz", 3);
  const fs::path p = w.write(test::scratch_dir() / "trailing.bin");
  const std::string msg = tokenizer_error(p, 3);
  EXPECT_NE(msg.find(p.string() + ": 3 extra bytes after token 2"), std::string::npos) << msg;
}

TEST(Llama2cTokenizerBroken, NegativeLength) {
  TokFileWriter w(8);
  w.token("<unk>", 0).token("\n<s>\n", 0).token("", 0, -4);
  const fs::path p = w.write(test::scratch_dir() / "neg.bin");
  const std::string msg = tokenizer_error(p, 3);
  EXPECT_NE(msg.find(p.string() + ": token 2 has negative length -4"), std::string::npos) << msg;
}

TEST(Llama2cTokenizerBroken, LengthAboveMaxTokenLength) {
  TokFileWriter w(4);
  w.token("<unk>", 0).token("<s>", 0).token("</s>", 0).token("toolong", 0);
  const fs::path p = w.write(test::scratch_dir() / "long.bin");
  const std::string msg = tokenizer_error(p, 4);
  EXPECT_NE(msg.find(p.string() + ": token 0 has length 5, more than max_token_length 4"),
            std::string::npos)
      << msg;
}

TEST(Llama2cTokenizerBroken, HugeLengthDoesNotAllocate) {
  TokFileWriter w(0x7fffffff);
  w.token("<unk>", 0).token("<s>", 0);
  const float score = 0;
  const int32_t len = 0x7ffffff0;
  w.put(&score, 4);
  w.put(&len, 4);
  w.put("abc", 3);
  const fs::path p = w.write(test::scratch_dir() / "huge.bin");
  const std::string msg = tokenizer_error(p, 3);
  EXPECT_NE(msg.find("truncated at token 2 of 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("needs 2147483632 bytes for its text"), std::string::npos) << msg;
}

TEST(Llama2cTokenizerBroken, ShortAndEmptyFiles) {
  const fs::path dir = test::scratch_dir();
  const fs::path empty = dir / "empty.bin";
  std::ofstream(empty, std::ios::binary).close();
  EXPECT_NE(tokenizer_error(empty, 512).find("tokenizer file has 0 bytes"), std::string::npos);
  const fs::path two = dir / "two.bin";
  std::ofstream(two, std::ios::binary).write("ab", 2);
  EXPECT_NE(tokenizer_error(two, 512).find("has 2 bytes, too short"), std::string::npos);
  EXPECT_NE(tokenizer_error(dir / "missing.bin", 512).find("cannot read tokenizer"),
            std::string::npos);
}

TEST(Llama2cTokenizerBroken, BadMaxTokenLengthAndVocabSize) {
  TokFileWriter w(0);
  w.token("", 0).token("", 0).token("", 0);
  const fs::path p = w.write(test::scratch_dir() / "zero_max.bin");
  EXPECT_NE(tokenizer_error(p, 3).find("max_token_length=0 must be positive"), std::string::npos);
  EXPECT_NE(tokenizer_error(p, 0).find("vocab_size=0 is too small"), std::string::npos);
  EXPECT_NE(tokenizer_error(p, -512).find("vocab_size=-512 is too small"), std::string::npos);
}

}  // namespace
}  // namespace poslens
