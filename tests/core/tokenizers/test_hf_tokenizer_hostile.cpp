// HfTokenizer on damaged or hostile tokenizer.json files: each gives one poslens::Error naming
// the file and the field, never a crash.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/tokenizers/hf_tokenizer.h"
#include "fixtures.h"

namespace poslens {
namespace {

using nlohmann::json;

json small_bpe() {
  return json::parse(R"({
    "version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [{"id": 0, "content": "<s>", "single_word": false, "lstrip": false,
                      "rstrip": false, "normalized": false, "special": true}],
    "normalizer": null, "pre_tokenizer": {"type": "WhitespaceSplit"},
    "model": {"type": "BPE", "dropout": null, "unk_token": null, "vocab":
              {"<s>": 0, "a": 1, "b": 2, "ab": 3}, "merges": ["a b"]},
    "post_processor": null, "decoder": null})");
}

std::string error_for(const json& j) {
  return test::error_of([&] { HfTokenizer::from_json(j.dump(), "hostile.json"); });
}

TEST(HfTokenizerHostile, SmallFileWorks) {
  const HfTokenizer t = HfTokenizer::from_json(small_bpe().dump(), "small.json");
  EXPECT_EQ(t.encode("ab a<s>", true), (std::vector<int64_t>{3, 1, 0}));
  EXPECT_EQ(t.decode({3, 1, 0}), "ab a");
}

TEST(HfTokenizerHostile, TruncatedJson) {
  const std::string text = small_bpe().dump();
  const auto e = test::error_of([&] { HfTokenizer::from_json(text.substr(0, text.size() / 2), "cut.json"); });
  EXPECT_TRUE(test::Contains(e, "cut.json"));
  EXPECT_TRUE(test::Contains(e, "not valid UTF-8 JSON"));
}

TEST(HfTokenizerHostile, MergeWithUnknownToken) {
  auto j = small_bpe();
  j["model"]["merges"] = {"a c"};
  const auto e = error_for(j);
  EXPECT_TRUE(test::Contains(e, "hostile.json: model.merges[0]"));
  EXPECT_TRUE(test::Contains(e, "\"c\", which is not in model.vocab"));
}

TEST(HfTokenizerHostile, BadRegex) {
  auto j = small_bpe();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}},
                        {"behavior", "Isolated"}, {"invert", false}};
  const auto e = error_for(j);
  EXPECT_TRUE(test::Contains(e, "hostile.json: pre_tokenizer (Split): regex /(unclosed/ does not compile"));
}

TEST(HfTokenizerHostile, HugeVocabularyClaim) {
  auto j = small_bpe();
  j["model"]["vocab"]["huge"] = int64_t{1} << 32;  // HF's ids are u32; 2^32 - 1 loads (gaps allowed)
  EXPECT_TRUE(test::Contains(error_for(j), "model.vocab[\"huge\"]: id 4294967296 is outside 0..4294967295"));
  auto k = small_bpe();
  k["added_tokens"][0]["id"] = 1ll << 40;
  EXPECT_TRUE(test::Contains(error_for(k), "added_tokens[0].id: id 1099511627776 is outside"));
}

// Gaps and shared ids load as in HF (test_hf_tokenizer.cpp, VocabularyIdsWithGaps...); a
// negative id is no u32.
TEST(HfTokenizerHostile, NegativeVocabularyId) {
  auto j = small_bpe();
  j["model"]["vocab"]["ab"] = -3;
  EXPECT_TRUE(test::Contains(error_for(j), "model.vocab[\"ab\"]: id -3 is outside 0..4294967295"));
}

TEST(HfTokenizerHostile, WrongTypes) {
  auto j = small_bpe();
  j["model"]["vocab"] = json::array({"a", "b"});
  EXPECT_TRUE(test::Contains(error_for(j), "hostile.json: model.vocab: must be an object"));
  auto k = small_bpe();
  k["model"]["merges"] = {42};
  EXPECT_TRUE(test::Contains(error_for(k), "model.merges[0]: must be \"a b\""));
  auto l = small_bpe();
  l["model"]["byte_fallback"] = "yes";
  EXPECT_TRUE(test::Contains(error_for(l), "model.byte_fallback: must be true or false"));
  auto m = small_bpe();
  m["model"]["type"] = "SentencePiece";
  EXPECT_TRUE(test::Contains(error_for(m), "model type \"SentencePiece\" is not supported"));
  auto n = small_bpe();
  n["model"]["dropout"] = 0.1;
  EXPECT_TRUE(test::Contains(error_for(n), "model.dropout"));
  auto o = small_bpe();
  o["normalizer"] = {{"type", "Precompiled"}, {"precompiled_charsmap", "AAAA"}};
  EXPECT_TRUE(test::Contains(error_for(o), "normalizer.precompiled_charsmap: 3 bytes, too short"));
  auto p = small_bpe();
  p["post_processor"] = {{"type", "BertProcessing"}, {"cls", {"<s>", 99}}, {"sep", {"<s>", 0}}};
  EXPECT_TRUE(test::Contains(error_for(p), "post_processor.cls[1]: token id 99 is outside"));
  EXPECT_TRUE(test::Contains(error_for(json::array()), "hostile.json: top level: must be an object"));
}

json small_wordpiece() {
  return json::parse(R"({
    "version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [{"id": 0, "content": "[UNK]", "single_word": false, "lstrip": false,
                      "rstrip": false, "normalized": false, "special": true}],
    "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                   "strip_accents": null, "lowercase": true},
    "pre_tokenizer": {"type": "BertPreTokenizer"},
    "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
              "max_input_chars_per_word": 100,
              "vocab": {"[UNK]": 0, "un": 1, "##aff": 2, "##able": 3, "a": 4}},
    "post_processor": null, "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true}})");
}

json small_unigram() {
  return json::parse(R"({
    "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
    "normalizer": null, "pre_tokenizer": {"type": "WhitespaceSplit"},
    "model": {"type": "Unigram", "unk_id": 0, "byte_fallback": false,
              "vocab": [["<unk>", 0.0], ["a", -1.5], ["b", -2.0], ["ab", -2.5]]},
    "post_processor": null, "decoder": null})");
}

/// base64 of `bytes` (standard alphabet, padded).
std::string base64(const std::string& bytes) {
  static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t n = uint32_t(static_cast<unsigned char>(bytes[i])) << 16;
    if (i + 1 < bytes.size()) n |= uint32_t(static_cast<unsigned char>(bytes[i + 1])) << 8;
    if (i + 2 < bytes.size()) n |= static_cast<unsigned char>(bytes[i + 2]);
    out += alphabet[(n >> 18) & 63];
    out += alphabet[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? alphabet[(n >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? alphabet[n & 63] : '=';
  }
  return out;
}

json with_charsmap(const std::string& blob_base64) {
  auto j = small_unigram();
  j["normalizer"] = {{"type", "Precompiled"}, {"precompiled_charsmap", blob_base64}};
  return j;
}

std::string stored(const std::string& name) {
  std::ifstream in(std::filesystem::path(POSLENS_SOURCE_DIR) / "tests/data/tokenizers" / name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(HfTokenizerHostile, WordPieceFields) {
  const HfTokenizer t = HfTokenizer::from_json(small_wordpiece().dump(), "wp.json");
  EXPECT_EQ(t.encode("Unaffable a", false), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(t.encode("unaffablex", false), (std::vector<int64_t>{0}));  // one piece fails: [UNK]
  EXPECT_EQ(t.decode({1, 2, 3, 4}), "unaffable a");

  auto j = small_wordpiece();
  j["model"].erase("vocab");
  EXPECT_TRUE(test::Contains(error_for(j), "hostile.json: model.vocab: missing"));
  auto k = small_wordpiece();
  k["model"]["unk_token"] = "<unk>";
  EXPECT_TRUE(test::Contains(error_for(k), "model.unk_token \"<unk>\" is not in model.vocab"));
  auto l = small_wordpiece();
  l["model"]["max_input_chars_per_word"] = -1;
  EXPECT_TRUE(test::Contains(error_for(l), "model.max_input_chars_per_word: must not be negative"));
  auto m = small_wordpiece();
  m["model"]["max_input_chars_per_word"] = "ten";
  EXPECT_TRUE(test::Contains(error_for(m), "model.max_input_chars_per_word: must be an integer"));
  auto n = small_wordpiece();
  n["model"]["continuing_subword_prefix"] = 5;
  EXPECT_TRUE(test::Contains(error_for(n), "model.continuing_subword_prefix: must be a string"));
  auto o = small_wordpiece();
  o["model"]["vocab"] = json::array({"[UNK]"});
  EXPECT_TRUE(test::Contains(error_for(o), "model.vocab: must be an object"));
}

TEST(HfTokenizerHostile, BertNormalizerFields) {
  auto j = small_wordpiece();
  j["normalizer"]["lowercase"] = "yes";
  EXPECT_TRUE(test::Contains(error_for(j), "normalizer.lowercase: must be true or false"));
  auto k = small_wordpiece();
  k["normalizer"]["strip_accents"] = 1;
  EXPECT_TRUE(test::Contains(error_for(k), "normalizer.strip_accents: must be true or false"));
}

TEST(HfTokenizerHostile, UnigramFields) {
  const HfTokenizer t = HfTokenizer::from_json(small_unigram().dump(), "uni.json");
  EXPECT_EQ(t.encode("ab ba", false), (std::vector<int64_t>{3, 2, 1}));
  const Encoding e = t.encode_full("aXYb", false);  // unknowns fused, their text kept
  EXPECT_EQ(e.ids, (std::vector<int64_t>{1, 0, 2}));
  EXPECT_EQ(e.tokens, (std::vector<std::string>{"a", "XY", "b"}));

  auto j = small_unigram();
  j["model"].erase("vocab");
  EXPECT_TRUE(test::Contains(error_for(j), "hostile.json: model.vocab: missing"));
  auto k = small_unigram();
  k["model"]["vocab"] = {{"a", -1.0}};
  EXPECT_TRUE(test::Contains(error_for(k), "model.vocab: must be a list, got object"));
  auto l = small_unigram();
  l["model"]["vocab"][1] = json::array({"a"});
  EXPECT_TRUE(test::Contains(error_for(l), "model.vocab[1]: must be [\"piece\", score]"));
  auto m = small_unigram();
  m["model"]["vocab"][1][1] = "high";
  EXPECT_TRUE(test::Contains(error_for(m), "model.vocab[1][1]: must be a number"));
  auto n = small_unigram();
  n["model"]["unk_id"] = 99;
  EXPECT_TRUE(test::Contains(error_for(n), "model.unk_id 99 is outside the 4-entry vocabulary"));
  auto o = small_unigram();
  o["model"]["unk_id"] = -1;
  EXPECT_TRUE(test::Contains(error_for(o), "model.unk_id: must be null or an id"));
  auto p = small_unigram();
  p["model"]["vocab"] = json::array();
  EXPECT_TRUE(test::Contains(error_for(p), "model.vocab is empty"));
  auto q = small_unigram();
  q["model"]["vocab"][2][0] = 7;
  EXPECT_TRUE(test::Contains(error_for(q), "model.vocab[2][0]: must be a string"));

  // No unk_id: loads (as HF), and only text with a character without a piece fails.
  auto r = small_unigram();
  r["model"]["unk_id"] = nullptr;
  const HfTokenizer no_unk = HfTokenizer::from_json(r.dump(), "no_unk.json");
  EXPECT_EQ(no_unk.encode("ab", false), (std::vector<int64_t>{3}));
  EXPECT_TRUE(test::Contains(test::error_of([&] { no_unk.encode("a😀", false); }),
                             "model.unk_id is null"));
}

TEST(HfTokenizerHostile, PrecompiledCharsmap) {
  EXPECT_TRUE(test::Contains(error_for(with_charsmap("not base64!")),
                             "hostile.json: normalizer.precompiled_charsmap: is not valid base64"));
  EXPECT_TRUE(test::Contains(error_for(with_charsmap("QUJD=")), "is not valid base64"));
  EXPECT_TRUE(test::Contains(error_for(with_charsmap("")), "0 bytes, too short"));
  EXPECT_TRUE(test::Contains(error_for(with_charsmap(base64(std::string("\xff\xff\0\0a\0", 6)))),
                             "trie size 65535 runs past the 6-byte blob"));
  EXPECT_TRUE(test::Contains(
      error_for(with_charsmap(base64(std::string("\4\0\0\0\0\0\0\0\xff\0", 10)))),
      "normalizer.precompiled_charsmap: its normalized strings are not valid UTF-8"));
  auto j = small_unigram();
  j["normalizer"] = {{"type", "Precompiled"}};
  EXPECT_TRUE(test::Contains(error_for(j), "normalizer.precompiled_charsmap: missing"));

  // T5's real charsmap cut short: the trie runs past the end.
  const auto t5 = json::parse(stored("t5_unigram_tokenizer.json"));
  const std::string full = t5["normalizer"]["precompiled_charsmap"];
  EXPECT_TRUE(test::Contains(error_for(with_charsmap(full.substr(0, 1000))), "runs past the"));

  // Random double arrays: whatever they say, encoding neither crashes nor yields bad UTF-8.
  std::mt19937 random(7);
  const std::string text = "Hello ÉCOLE ① ½ 日本 😀 e\u0301 \x1e tab\t and \r\n end";
  for (int round = 0; round < 200; ++round) {
    const uint32_t units = 1 + random() % 300;
    std::string blob(4, '\0');
    const uint32_t bytes = units * 4;
    for (int k = 0; k < 4; ++k) blob[static_cast<size_t>(k)] = static_cast<char>(bytes >> (8 * k));
    for (uint32_t u = 0; u < units; ++u) {
      // units shaped like darts-clone ones often enough to walk a few levels
      uint32_t v = random();
      if (round % 2 == 0) v = (v & ~0xFFu & ~(1u << 31)) | static_cast<unsigned char>(text[u % text.size()]);
      for (int k = 0; k < 4; ++k) blob += static_cast<char>(v >> (8 * k));
    }
    blob += std::string("abc\0\xc3\xa9\0 \0\0", 9);
    auto tokenizer_json = with_charsmap(base64(blob));
    tokenizer_json["model"]["byte_fallback"] = true;
    try {
      const HfTokenizer t = HfTokenizer::from_json(tokenizer_json.dump(), "random.json");
      const Encoding e = t.encode_full(text, true);
      for (const auto& token : e.tokens) ASSERT_NO_THROW(t.encode(token, false));
    } catch (const Error& e) {
      ADD_FAILURE() << "round " << round << ": " << e.what();
    }
  }
}

TEST(HfTokenizerHostile, TruncatedBertAndT5Files) {
  for (const char* name : {"bert_uncased_tokenizer.json", "t5_unigram_tokenizer.json"}) {
    const std::string text = stored(name);
    ASSERT_GT(text.size(), 1000u) << name;
    EXPECT_NO_THROW(HfTokenizer::from_json(text, name));
    for (int k = 1; k < 40; ++k) {
      const size_t cut = text.size() * static_cast<size_t>(k) / 40;
      const std::string e = test::error_of([&] { HfTokenizer::from_json(text.substr(0, cut), name); });
      EXPECT_TRUE(test::Contains(e, name)) << cut;
    }
  }
}

TEST(HfTokenizerHostile, DeepNestingAndRepeatedKeys) {
  std::string deep(100, '[');
  EXPECT_TRUE(test::Contains(test::error_of([&] { HfTokenizer::from_json(deep, "deep.json"); }),
                             "nests deeper"));
  EXPECT_TRUE(test::Contains(
      test::error_of([&] { HfTokenizer::from_json(R"({"model": {}, "model": {}})", "twice.json"); }),
      "appears twice"));
}

TEST(HfTokenizerHostile, FileLimits) {
  const auto dir = test::scratch_dir();
  const auto path = (dir / "tokenizer.json").string();
  {
    std::ofstream out(path);
    out << "{\"model\": " << std::string(65 << 20, ' ') << "}";
  }
  EXPECT_TRUE(test::Contains(test::error_of([&] { HfTokenizer::read(path); }), "larger than the limit"));
  EXPECT_TRUE(test::Contains(test::error_of([&] { HfTokenizer::read((dir / "none.json").string()); }),
                             "not found"));
}

}  // namespace
}  // namespace poslens
