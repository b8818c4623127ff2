// SentencePieceTokenizer against SentencePiece itself: the ids, pieces, byte offsets and
// decodes that Debian's python3-sentencepiece 0.1.97 gives for ~30 varied texts
// (tests/data/tokenizers/*_spm_reference.json, made by tools/make_spm_reference.py), for the
// real Llama-2 and tiny-spm models in ../shared/fixtures and four tiny models trained by that
// script (Unigram, CHAR, WORD, BPE with whitespace as suffix).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/base/error.h"
#include "core/tokenizers/sentencepiece_tokenizer.h"
#include "fixtures.h"

namespace poslens {
namespace {

namespace fs = std::filesystem;
using Ids = std::vector<int64_t>;

fs::path data_dir() { return fs::path(POSLENS_SOURCE_DIR) / "tests" / "data" / "tokenizers"; }

nlohmann::json load_reference(const std::string& name) {
  std::ifstream in(data_dir() / (name + "_spm_reference.json"));
  EXPECT_TRUE(in.good()) << "missing reference for " << name;
  return nlohmann::json::parse(in);
}

/// The model behind a reference: a fixture (skipped when absent) or a tiny model in tests/data.
fs::path model_path(const std::string& name) {
  if (name == "llama2" || name == "tiny-spm")
    return test::fixtures_dir() / "tokenizers" / name / "tokenizer.model";
  return data_dir() / (name + ".model");
}

class SentencePieceReference : public ::testing::TestWithParam<std::string> {};

TEST_P(SentencePieceReference, MatchesSentencePiece) {
  const std::string name = GetParam();
  const fs::path path = model_path(name);
  if (!fs::exists(path)) POSLENS_MISSING_PREREQUISITE("fixture absent: " << path);
  const auto tok = SentencePieceTokenizer::read(path.string());
  const nlohmann::json ref = load_reference(name);
  ASSERT_EQ(tok->vocab_size(), ref["vocab_size"].get<int64_t>());
  EXPECT_EQ(tok->bos_id(), ref["bos_id"].get<int64_t>());
  EXPECT_EQ(tok->eos_id(), ref["eos_id"].get<int64_t>());

  int matched = 0, cases = 0, lossless = 0;
  for (const auto& c : ref["cases"]) {
    ++cases;
    const std::string text = c["text"].get<std::string>();
    SCOPED_TRACE(name + " text \"" + text + "\"");
    using Offsets = std::vector<std::pair<size_t, size_t>>;
    const auto ids = c["ids"].get<Ids>();
    const auto pieces = c["pieces"].get<std::vector<std::string>>();
    const auto offsets = c["offsets"].get<Offsets>();
    const std::string decoded = c["decoded"].get<std::string>();

    // encode: SentencePiece's ids; with BOS those of HF's LlamaTokenizer (bos + ids).
    const Ids got = tok->encode(text, false);
    EXPECT_EQ(got, ids);
    Ids with_bos = ids;
    if (tok->bos_id() >= 0) with_bos.insert(with_bos.begin(), tok->bos_id());
    EXPECT_EQ(tok->encode(text, true), with_bos);

    // encode_full: pieces and offsets. SentencePiece gives the byte pieces of one character
    // empty ranges but the last; ours all carry the character's range (HF's convention).
    const Encoding full = tok->encode_full(text, true);
    EXPECT_EQ(full.ids, with_bos);
    ASSERT_EQ(full.tokens.size(), full.ids.size());
    ASSERT_EQ(full.offsets.size(), full.ids.size());
    const std::size_t skip = tok->bos_id() >= 0 ? 1 : 0;
    if (skip) {
      EXPECT_EQ(full.offsets[0], std::make_pair(size_t{0}, size_t{0}));
    }
    // SentencePiece shows an unknown piece as its text ("H"); ours is the raw piece "<unk>".
    auto expected_pieces = pieces;
    for (std::size_t i = 0; i < ids.size() && i < expected_pieces.size(); ++i)
      if (ids[i] == ref["unk_id"].get<int64_t>()) expected_pieces[i] = tok->piece(ids[i]);
    EXPECT_EQ(std::vector<std::string>(full.tokens.begin() + skip, full.tokens.end()),
              expected_pieces);
    // Byte pieces come in groups of one UTF-8 character (the lead byte tells its length);
    // SentencePiece gives the range to the group's last piece, we give it to all of them.
    auto expected_offsets = offsets;
    for (std::size_t i = 0; i < pieces.size() && i < expected_offsets.size();) {
      const bool byte_piece = pieces[i].size() == 6 && pieces[i].rfind("<0x", 0) == 0;
      if (!byte_piece) {
        ++i;
        continue;
      }
      const int lead = std::stoi(pieces[i].substr(3, 2), nullptr, 16);
      const std::size_t n = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
      const std::size_t last = std::min(i + n, expected_offsets.size()) - 1;
      for (std::size_t j = i; j < last; ++j) expected_offsets[j] = expected_offsets[last];
      i = last + 1;
    }
    EXPECT_EQ(Offsets(full.offsets.begin() + skip, full.offsets.end()), expected_offsets);

    // decode: SentencePiece's text, with or without BOS/EOS around it.
    EXPECT_EQ(tok->decode(ids), decoded);
    Ids framed = with_bos;
    if (tok->eos_id() >= 0) framed.push_back(tok->eos_id());
    EXPECT_EQ(tok->decode(framed), decoded);

    // Round trip wherever SentencePiece itself is lossless for the text.
    if (decoded == text) {
      ++lossless;
      EXPECT_EQ(tok->decode(tok->encode(text, true)), text);
    }
    if (got == ids) ++matched;
  }
  EXPECT_EQ(matched, cases);
  std::cout << "[ reference ] " << name << ": " << matched << "/" << cases
            << " texts give SentencePiece's ids; " << lossless << " round-trip losslessly\n";
}

/// Llama-2's model (identity normaliser, byte fallback) is lossless on any valid UTF-8: random
/// strings of ASCII, whitespace, accents, CJK and emoji come back unchanged (not "▁" itself,
/// which decodes as a space, in SentencePiece too).
TEST(SentencePieceRoundTrip, Llama2RandomUtf8) {
  const fs::path path = model_path("llama2");
  if (!fs::exists(path)) POSLENS_MISSING_PREREQUISITE("fixture absent: " << path);
  const auto tok = SentencePieceTokenizer::read(path.string());
  const std::vector<std::string> alphabet = {
      "a", "b", "z", "Q", "0", "7", " ", " ", "  ", "\t", "\n", "\r", ".", "<", "s", ">",
      "\xC3\xA9", "\xC3\x9F", "\xE4\xB8\xAD", "\xE6\x96\x87", "\xF0\x9F\x98\x80",
      "\xE2\x80\x8D", "\xEF\xBF\xBD", "\xF0\x9F\x87\xAB", "\x01"};
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    std::string text;
    const int n = static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) text += alphabet[rng() % alphabet.size()];
    SCOPED_TRACE("text \"" + text + "\"");
    const Encoding e = tok->encode_full(text, true);
    EXPECT_EQ(tok->decode(e.ids), text);
    for (std::size_t i = 0; i < e.offsets.size(); ++i) {
      EXPECT_LE(e.offsets[i].first, e.offsets[i].second);
      EXPECT_LE(e.offsets[i].second, text.size());
      if (i > 0) {
        EXPECT_LE(e.offsets[i - 1].first, e.offsets[i].first);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, SentencePieceReference,
                         ::testing::Values("llama2", "tiny-spm", "spm_unigram_tiny",
                                           "spm_char_tiny", "spm_word_tiny",
                                           "spm_bpe_suffix_tiny"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace poslens
