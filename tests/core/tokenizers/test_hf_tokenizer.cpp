// HfTokenizer against HF's Rust `tokenizers`: every case of tests/data/tokenizers/*_reference.json
// (made by tools/make_tokenizer_reference.js and tools/make_bert_t5_reference.js with the npm
// binding) must match exactly: ids, tokens and byte offsets with and without special tokens,
// and decode(ids).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/tokenizers/hf_json.h"
#include "core/tokenizers/hf_tokenizer.h"
#include "fixtures.h"

namespace poslens {
namespace {

namespace fs = std::filesystem;

fs::path reference_dir() { return fs::path(POSLENS_SOURCE_DIR) / "tests/data/tokenizers"; }
fs::path hf_fixture(const std::string& name) {
  return test::fixtures_dir() / "tokenizers" / name / "tokenizer.json";
}

nlohmann::json load(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return nlohmann::json::parse(s.str());
}

#define POSLENS_REQUIRE_HF_FIXTURE(name)                                                     \
  do {                                                                                       \
    if (!fs::exists(hf_fixture(name)))                                                       \
      POSLENS_MISSING_PREREQUISITE("fixture absent: " << hf_fixture(name)                    \
                   << " (PosLens tests read ../shared/fixtures; pass -DPOSLENS_FIXTURES_DIR)"); \
  } while (0)

/// Compares one reference case; returns the number of mismatching fields (each reported).
int check_case(const HfTokenizer& t, const nlohmann::json& c, const std::string& label) {
  int bad = 0;
  const std::string text = c["text"];
  for (const char* key : {"with_special", "without_special"}) {
    const auto& want = c[key];
    const Encoding got = t.encode_full(text, std::string(key) == "with_special");
    const auto ids = want["ids"].get<std::vector<int64_t>>();
    const auto tokens = want["tokens"].get<std::vector<std::string>>();
    std::vector<std::pair<size_t, size_t>> offsets;
    for (const auto& o : want["offsets"]) offsets.emplace_back(o[0].get<size_t>(), o[1].get<size_t>());
    const std::string where = label + " " + key + " text " + nlohmann::json(text).dump();
    if (got.ids != ids) { ADD_FAILURE() << where << ": ids differ"; ++bad; }
    if (got.tokens != tokens) {
      ADD_FAILURE() << where << ": tokens differ: " << nlohmann::json(got.tokens).dump()
                    << " HF " << want["tokens"].dump();
      ++bad;
    }
    if (got.offsets != offsets) {
      ADD_FAILURE() << where << ": offsets differ: " << nlohmann::json(got.offsets).dump()
                    << " HF " << want["offsets"].dump();
      ++bad;
    }
    if (t.encode(text, std::string(key) == "with_special") != ids) {
      ADD_FAILURE() << where << ": encode() ids differ from encode_full()";
      ++bad;
    }
    const std::string decoded = t.decode(ids);
    if (want["decoded"].is_null()) continue;  // HF's own decode varies between runs
    if (decoded != want["decoded"].get<std::string>()) {
      ADD_FAILURE() << where << ": decode gives " << nlohmann::json(decoded).dump() << ", HF "
                    << want["decoded"].dump();
      ++bad;
    }
  }
  return bad;
}

void check_fixture(const std::string& name) {
  const HfTokenizer t = HfTokenizer::read(hf_fixture(name).string());
  const auto data = load(reference_dir() / (name + "_reference.json"));
  int bad = 0;
  for (const auto& c : data["cases"]) bad += check_case(t, c, name);
  EXPECT_EQ(bad, 0);
  EXPECT_GE(data["cases"].size(), 30u);
}

TEST(HfTokenizer, Gpt2MatchesHfReference) {
  POSLENS_REQUIRE_HF_FIXTURE("gpt2");
  check_fixture("gpt2");
}

TEST(HfTokenizer, MistralMatchesHfReference) {
  POSLENS_REQUIRE_HF_FIXTURE("mistral");
  check_fixture("mistral");
}

void check_components(const std::string& file, size_t at_least) {
  const auto data = load(reference_dir() / file);
  ASSERT_GE(data["components"].size(), at_least);
  for (const auto& component : data["components"]) {
    const std::string name = component["name"];
    SCOPED_TRACE(name);
    try {
      const HfTokenizer t = HfTokenizer::from_json(component["tokenizer"].dump(), name);
      int bad = 0;
      for (const auto& c : component["cases"]) bad += check_case(t, c, name);
      EXPECT_EQ(bad, 0) << name;
    } catch (const Error& e) {
      ADD_FAILURE() << name << ": " << e.what();
    }
  }
}

/// tests/data/tokenizers/<name>_tokenizer.json (made by tools/make_wordpiece_tokenizer_json.js
/// or tools/make_unigram_tokenizer_json.py) against <name>_reference.json.
void check_stored(const std::string& name) {
  const HfTokenizer t = HfTokenizer::read((reference_dir() / (name + "_tokenizer.json")).string());
  const auto data = load(reference_dir() / (name + "_reference.json"));
  int bad = 0;
  for (const auto& c : data["cases"]) bad += check_case(t, c, name);
  EXPECT_EQ(bad, 0);
  EXPECT_GE(data["cases"].size(), 50u);
}

TEST(HfTokenizer, ComponentsMatchHfReference) { check_components("components_reference.json", 50); }

/// Ids with gaps (tiktoken conversions) and ids two tokens share load as in HF, with HF's ids;
/// GPT-2 renumbered with a gap after every 97th id encodes like HF on the fixture texts.
TEST(HfTokenizer, VocabularyIdsWithGapsMatchHfReference) {
  check_components("gapped_vocab_reference.json", 5);
  const auto data = load(reference_dir() / "gapped_vocab_reference.json");
  for (const auto& component : data["components"]) {
    const HfTokenizer t = HfTokenizer::from_json(component["tokenizer"].dump(), "gapped");
    EXPECT_GE(t.vocab_size(), component["vocab_size_with_added"].get<int64_t>()) << component["name"];
  }
  // The stored tokenizer's ids run up to 2^32 - 1: the largest id + 1 sizes the vocabulary.
  const HfTokenizer wordlevel = HfTokenizer::from_json(data["components"][2]["tokenizer"].dump(), "w");
  EXPECT_EQ(wordlevel.vocab_size(), int64_t{1} << 32);
  EXPECT_TRUE(test::Contains(test::error_of([&] { wordlevel.piece(8); }), "token id 8 has no piece"));

  POSLENS_REQUIRE_HF_FIXTURE("gpt2");
  auto json = load(hf_fixture("gpt2"));
  const auto gapped = [](int64_t id) { return id + 3 * (id / 97); };  // as the generator does
  for (auto& [token, id] : json["model"]["vocab"].items()) id = gapped(id.get<int64_t>());
  for (auto& added : json["added_tokens"]) added["id"] = gapped(added["id"].get<int64_t>());
  const HfTokenizer t = HfTokenizer::from_json(json.dump(), "gpt2 gapped");
  int bad = 0;
  for (const auto& c : data["gpt2_gapped"]["cases"]) bad += check_case(t, c, "gpt2_gapped");
  EXPECT_EQ(bad, 0);
}

TEST(HfTokenizer, BertUncasedWordPieceMatchesHfReference) { check_stored("bert_uncased"); }
TEST(HfTokenizer, BertCasedWordPieceMatchesHfReference) { check_stored("bert_cased"); }
TEST(HfTokenizer, T5UnigramPrecompiledMatchesHfReference) { check_stored("t5_unigram"); }

/// The tokenizer.json layouts of the 2024–26 families (Llama 3 / SmolLM3, gpt-oss's o200k, Qwen2/3,
/// Cohere, Gemma 2/3, ModernBERT) with vocabularies trained by HF's trainer
/// (tools/make_family_tokenizers.py): HF's ids, tokens, offsets and decode on 57 texts each.
TEST(HfTokenizer, FamilyLayoutsOf2024To26MatchHfReference) { check_components("families_reference.json", 7); }

TEST(HfTokenizer, BertAndT5ComponentsMatchHfReference) {
  check_components("bert_t5_components_reference.json", 20);
}

TEST(HfTokenizer, BertAndT5Structure) {
  const HfTokenizer bert =
      HfTokenizer::read((reference_dir() / "bert_uncased_tokenizer.json").string());
  EXPECT_EQ(bert.bos_id(), bert.id_of("[CLS]"));
  EXPECT_EQ(bert.eos_id(), bert.id_of("[SEP]"));
  EXPECT_EQ(bert.vocab_size(), 3005);
  EXPECT_EQ(bert.special_ids(), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(test::Contains(bert.describe(), "WordPiece"));
  EXPECT_TRUE(test::Contains(bert.describe(), "normalizer BertNormalizer"));
  // WordPiece's decoder alone: a continuation shows without its "##", a word with a space
  const int64_t ing = bert.id_of("##ing");
  ASSERT_GE(ing, 0);
  EXPECT_EQ(bert.token_text(ing), "ing");

  const HfTokenizer t5 = HfTokenizer::read((reference_dir() / "t5_unigram_tokenizer.json").string());
  EXPECT_EQ(t5.bos_id(), -1);
  EXPECT_EQ(t5.eos_id(), 1);
  EXPECT_TRUE(test::Contains(t5.describe(), "Unigram"));
  EXPECT_TRUE(test::Contains(t5.describe(), "normalizer Precompiled"));
  // An unknown character's token is the character itself (HF Unigram), its id <unk>'s
  const Encoding e = t5.encode_full("a 😀", false);
  ASSERT_FALSE(e.tokens.empty());
  EXPECT_EQ(e.tokens.back(), "😀");
  EXPECT_EQ(e.ids.back(), t5.id_of("<unk>"));
  EXPECT_EQ(t5.piece(e.ids.back()), "<unk>");
}

TEST(HfTokenizer, UnigramScoresReadAsHfReadsThem) {
  // HF (serde_json without float_roundtrip) reads these scores of the T5 file one unit in the
  // last place off; its own tokenizer.save() writes them back as the right-hand values.
  EXPECT_EQ(hf::serde_json_f64(-7.4436163902282715), -7.443616390228272);
  EXPECT_EQ(hf::serde_json_f64(-9.011524200439453), -9.011524200439451);
  EXPECT_EQ(hf::serde_json_f64(-10.839990615844727), -10.839990615844728);
  // exact ones stay
  EXPECT_EQ(hf::serde_json_f64(-2.244617462158203), -2.244617462158203);
  EXPECT_EQ(hf::serde_json_f64(-5.0), -5.0);
  EXPECT_EQ(hf::serde_json_f64(0.0), 0.0);
  EXPECT_EQ(hf::serde_json_f64(1e-5), 1e-5);
  EXPECT_EQ(hf::serde_json_f64(-1.5e300), -1.5e300);
}

TEST(HfTokenizer, Gpt2IsLossless) {
  POSLENS_REQUIRE_HF_FIXTURE("gpt2");
  const HfTokenizer t = HfTokenizer::read(hf_fixture("gpt2").string());
  const auto data = load(reference_dir() / "gpt2_reference.json");
  for (const auto& c : data["cases"]) {
    const std::string text = c["text"];
    if (text.find("<|endoftext|>") != std::string::npos) continue;  // special: left out
    EXPECT_EQ(t.decode(t.encode(text, true)), text);
  }
}

TEST(HfTokenizer, Gpt2FromVocabAndMergesEqualsTokenizerJson) {
  POSLENS_REQUIRE_HF_FIXTURE("gpt2");
  const auto dir = test::fixtures_dir() / "tokenizers/gpt2";
  const HfTokenizer t = HfTokenizer::from_gpt2_files((dir / "vocab.json").string(),
                                                     (dir / "merges.txt").string());
  EXPECT_EQ(t.bos_id(), 50256);
  EXPECT_EQ(t.eos_id(), 50256);
  EXPECT_EQ(t.vocab_size(), 50257);
  const auto data = load(reference_dir() / "gpt2_reference.json");
  int bad = 0;
  for (const auto& c : data["cases"]) bad += check_case(t, c, "gpt2 files");
  EXPECT_EQ(bad, 0);
}

TEST(HfTokenizer, PiecesTokenTextAndSpecials) {
  POSLENS_REQUIRE_HF_FIXTURE("mistral");
  POSLENS_REQUIRE_HF_FIXTURE("gpt2");
  const HfTokenizer gpt2 = HfTokenizer::read(hf_fixture("gpt2").string());
  EXPECT_EQ(gpt2.encode("Hello world!", true), (std::vector<int64_t>{15496, 995, 0}));
  EXPECT_EQ(gpt2.piece(995), "Ġworld");
  EXPECT_EQ(gpt2.token_text(995), " world");
  EXPECT_EQ(gpt2.token_text(198), "\n");
  EXPECT_EQ(gpt2.special_ids(), std::vector<int64_t>{50256});
  EXPECT_EQ(gpt2.bos_id(), 50256);
  EXPECT_TRUE(test::Contains(gpt2.describe(), "BPE"));

  const HfTokenizer mistral = HfTokenizer::read(hf_fixture("mistral").string());
  EXPECT_EQ(mistral.bos_id(), 1);
  EXPECT_EQ(mistral.eos_id(), 2);  // from tokenizer_config.json beside the file
  EXPECT_EQ(mistral.special_ids(), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(mistral.vocab_size(), 32000);
  const int64_t the = mistral.id_of("▁the");
  ASSERT_GE(the, 0);
  EXPECT_EQ(mistral.piece(the), "▁the");
  EXPECT_EQ(mistral.token_text(the), " the");
  EXPECT_EQ(mistral.token_text(mistral.id_of("<0x0A>")), "\n");
  EXPECT_EQ(mistral.token_text(1), "<s>");
  EXPECT_EQ(mistral.encode("Hi", true).front(), 1);
  EXPECT_NE(mistral.encode("Hi", false).front(), 1);
  EXPECT_TRUE(test::Contains(test::error_of([&] { mistral.piece(32000); }), "outside the vocabulary"));
  EXPECT_TRUE(test::Contains(test::error_of([&] { mistral.encode("bad \xff byte", true); }),
                             "not valid UTF-8"));
}

}  // namespace
}  // namespace poslens
