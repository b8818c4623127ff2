// HfTokenizer on damaged or hostile tokenizer.json files: each gives one poslens::Error naming
// the file and the field, never a crash.
#include <gtest/gtest.h>

#include <fstream>
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
  j["model"]["vocab"]["huge"] = 2147483647;
  EXPECT_TRUE(test::Contains(error_for(j), "model.vocab[\"huge\"]: id 2147483647 is outside 0..4"));
  auto k = small_bpe();
  k["added_tokens"][0]["id"] = 1ll << 40;
  EXPECT_TRUE(test::Contains(error_for(k), "added_tokens[0].id: id 1099511627776 is outside"));
}

TEST(HfTokenizerHostile, DuplicateIdsAndGaps) {
  auto j = small_bpe();
  j["model"]["vocab"]["ab"] = 2;
  EXPECT_TRUE(test::Contains(error_for(j), "is given to two tokens"));
  auto k = small_bpe();
  k["model"]["vocab"]["ab"] = 7;
  EXPECT_TRUE(test::Contains(error_for(k), "without gaps"));
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
  m["model"]["type"] = "WordPiece";
  EXPECT_TRUE(test::Contains(error_for(m), "model type \"WordPiece\" is not supported"));
  auto n = small_bpe();
  n["model"]["dropout"] = 0.1;
  EXPECT_TRUE(test::Contains(error_for(n), "model.dropout"));
  auto o = small_bpe();
  o["normalizer"] = {{"type", "Precompiled"}, {"precompiled_charsmap", "AAAA"}};
  EXPECT_TRUE(test::Contains(error_for(o), "Precompiled normalizer not supported"));
  auto p = small_bpe();
  p["post_processor"] = {{"type", "BertProcessing"}, {"cls", {"<s>", 99}}, {"sep", {"<s>", 0}}};
  EXPECT_TRUE(test::Contains(error_for(p), "post_processor.cls[1]: token id 99 is outside"));
  EXPECT_TRUE(test::Contains(error_for(json::array()), "hostile.json: top level: must be an object"));
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
