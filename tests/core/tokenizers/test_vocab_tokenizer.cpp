// The task tokenizers (vocab_tokenizer.h) against HF's Rust `tokenizers` reading the same
// tokenizer.json. Expected ids generated once with
//   npm install tokenizers
//   node tools/hf_tokenizer_ids.js TOKENIZER.json TEXT...
// on the tokenizer.json files these tests write (flipflop and counting task vocabularies, the
// character vocabulary below), npm tokenizers 0.23.2, 2026-11-23.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "core/base/error.h"
#include "core/tokenizers/vocab_tokenizer.h"
#include "core/train/task.h"
#include "fixtures.h"

namespace poslens {
namespace {

using test::Contains;
using test::error_of;

struct Expected {
  std::string text;
  std::vector<int64_t> ids;  ///< HF encode(text) with its default add_special_tokens
};

/// Writes `tokenizer` as tokenizer.json, reads it back and checks every expected encoding.
void check_against_hf(const VocabTokenizer& tokenizer, const std::vector<Expected>& expected) {
  const auto path = test::scratch_dir() / "tokenizer.json";
  std::ofstream(path) << tokenizer.to_json();
  const auto read = VocabTokenizer::read(path.string());
  EXPECT_EQ(read.pieces(), tokenizer.pieces());
  EXPECT_EQ(read.bos_id(), tokenizer.bos_id());
  for (const auto& e : expected)
    EXPECT_EQ(read.encode(e.text, true), e.ids) << "text: " << e.text;
}

TEST(VocabTokenizer, FlipFlopCharactersAsHf) {
  const auto task = train::make_task({"flipflop", 8, {}});
  check_against_hf(dynamic_cast<const VocabTokenizer&>(task->tokenizer()), {
                                          {"w0i1r0", {0, 3, 2, 4, 1, 3}},
                                          {"w1 r1", {0, 4, 1, 4}},  // unknown " " left out
                                          {"w<x>0", {0, 3}},
                                          {"ri10", {1, 2, 4, 3}},
                                      });
  EXPECT_EQ(task->tokenizer().decode({0, 3, 1, 3}), "w0r0");
}

TEST(VocabTokenizer, CountingWordsAsHf) {
  const auto task = train::make_task({"counting", 32, {}});
  check_against_hf(dynamic_cast<const VocabTokenizer&>(task->tokenizer()), {
                                          {"a = 0 ; a ++ ; pass ; print a 1", {1, 6, 11, 7, 1, 8, 7, 9, 7, 10, 1, 12}},
                                          {"  b ++ ;  c = 10 print  b", {2, 8, 7, 3, 6, 21, 10, 2}},
                                          {"a=0 ; foo <pad> a", {22, 7, 22, 0, 1}},
                                          {"print<pad>a", {10, 0, 1}},
                                      });
  EXPECT_EQ(task->tokenizer().decode(task->tokenizer().encode(" a  ++ ;\nprint a 3 ", false)),
            "a ++ ; print a 3");
}

TEST(VocabTokenizer, CharactersWithBosAndUnknownAsHf) {
  const VocabTokenizer tokenizer(
      VocabTokenizer::Unit::Character,
      {"<bos>", "<unk>", "\n", " ", "%", "a", "b", "c", "e", "f", "h", "i", "j", "k", "l", "m",
       "n", "o", "p", "q", "r", "s", "t", "u", "w", "x"},
      "<bos>", "<unk>");
  check_against_hf(tokenizer, {
                                  {"the fox", {0, 22, 10, 8, 3, 9, 17, 25}},
                                  {"h\xC3\xA9llo\nthere%", {0, 10, 1, 14, 14, 17, 2, 22, 10, 8, 20, 8, 4}},
                                  {"<bos>ab", {0, 0, 5, 6}},  // specials match in the raw text
                                  {"zz<unk>q", {0, 1, 1, 1, 19}},
                              });
  // Unlike HF's decode(skip_special_tokens), <unk> stays visible; BOS is dropped.
  EXPECT_EQ(tokenizer.decode({0, 10, 1, 14}), "h<unk>l");
  EXPECT_EQ(tokenizer.encode("ab", false), (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(tokenizer.encode(std::string("a\xFF" "b"), false), (std::vector<int64_t>{5, 1, 6}))
      << "an invalid UTF-8 byte is an unknown character";
}

TEST(VocabTokenizer, RejectsWhatItCannotRead) {
  const auto dir = test::scratch_dir();
  auto write = [&](const std::string& text) {
    std::ofstream(dir / "tokenizer.json") << text;
    return (dir / "tokenizer.json").string();
  };
  EXPECT_TRUE(Contains(error_of([&] {
                         VocabTokenizer::read(write(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}})"));
                       }),
                       "model.merges is not an empty list"));
  EXPECT_TRUE(Contains(error_of([&] {
                         VocabTokenizer::read(write(R"({"model": {"type": "Unigram", "vocab": []}})"));
                       }),
                       "model.type \"Unigram\" is not supported"));
  EXPECT_TRUE(Contains(error_of([&] {
                         VocabTokenizer::read(write(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 5}, "merges": []}})"));
                       }),
                       "model.vocab ids are not 0..n-1 once each"));
  EXPECT_TRUE(Contains(error_of([&] { VocabTokenizer::read(write("{\"model\": [[[")); }), "tokenizer.json"));
  EXPECT_TRUE(Contains(error_of([] { VocabTokenizer(VocabTokenizer::Unit::Character, {"a", "bc"}); }),
                       "is not one character"));
  EXPECT_TRUE(Contains(error_of([] { VocabTokenizer(VocabTokenizer::Unit::Word, {"a", "a"}); }),
                       "appears twice"));
  EXPECT_TRUE(Contains(error_of([] { VocabTokenizer(VocabTokenizer::Unit::Word, {"a"}, "<s>"); }),
                       "BOS token \"<s>\" is not a special piece"));
}

}  // namespace
}  // namespace poslens
