#pragma once
// SentencePiece's text normalisation (google/sentencepiece src/normalizer.cc, v0.1.97):
// the precompiled character map (sentencepiece_charsmap.h; longest match wins, as nmt_nfkc and
// friends store it in the model), dropping leading,
// trailing and repeated spaces (remove_extra_whitespaces), the dummy "▁" prefix
// (add_dummy_prefix; a suffix with treat_whitespace_as_suffix) and " " -> "▁"
// (escape_whitespaces). User-defined pieces are copied unnormalised, as in SentencePiece.
// Malformed UTF-8 becomes U+FFFD, one input byte each.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/tokenizers/sentencepiece_charsmap.h"
#include "core/tokenizers/sentencepiece_model.h"

namespace poslens::spm {

/// "▁" (U+2581 LOWER ONE EIGHTH BLOCK), SentencePiece's whitespace symbol.
inline constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";

/// Length of the UTF-8 sequence a lead byte announces (1 for continuation and invalid bytes),
/// SentencePiece's string_util::OneCharLen.
inline std::size_t utf8_char_len(unsigned char lead) {
  return static_cast<std::size_t>("\1\1\1\1\1\1\1\1\1\1\1\1\2\2\3\4"[lead >> 4]);
}

/// SentencePiece's string_util::IsValidDecodeUTF8: true and the length of the well-formed
/// code point at the start of `s` (no overlongs, no surrogates, at most U+10FFFF); false and 1
/// for anything else. `s` must not be empty.
bool utf8_valid_char(std::string_view s, std::size_t* length);

/// Longest-match lookup of the user-defined pieces (SentencePiece's PrefixMatcher).
class PrefixMatcher {
 public:
  explicit PrefixMatcher(const std::vector<std::string_view>& words);
  ~PrefixMatcher();
  PrefixMatcher(const PrefixMatcher&) = delete;
  PrefixMatcher& operator=(const PrefixMatcher&) = delete;
  /// Length of the longest word that starts `s` (`*found` = true), else the length of the
  /// first UTF-8 character, clipped to `s` (`*found` = false). `s` must not be empty.
  std::size_t match(std::string_view s, bool* found) const;
  bool empty() const { return nodes_.size() <= 1; }

 private:
  struct Node {
    std::vector<std::pair<unsigned char, uint32_t>> children;  // sorted by byte
    bool terminal = false;
  };
  std::vector<Node> nodes_;  // a byte trie; node 0 is the root
};

class Normalizer {
 public:
  /// `name` (the file) starts error messages. Throws poslens::Error if the precompiled
  /// charsmap is present but malformed (too short, trie size past the end).
  /// `matcher` (may be null) must outlive the normalizer.
  Normalizer(const SentencePieceNormalizerSpec& spec, bool treat_whitespace_as_suffix,
             const PrefixMatcher* matcher, const std::string& name);
  ~Normalizer();
  Normalizer(const Normalizer&) = delete;
  Normalizer& operator=(const Normalizer&) = delete;

  /// Normalises `input` into `normalized`; `norm_to_orig[i]` is the input byte offset that
  /// normalised byte i comes from, with one extra entry at the end (size = normalized + 1),
  /// exactly as SentencePiece's Normalizer::Normalize. Empty input gives empty output and an
  /// empty map.
  void normalize(std::string_view input, std::string& normalized,
                 std::vector<std::size_t>& norm_to_orig) const;

 private:
  /// The normalised text of the longest rule matching the start of `input` and the number of
  /// input bytes it consumes (NormalizePrefix).
  std::pair<std::string_view, std::size_t> normalize_prefix(std::string_view input) const;

  SentencePieceNormalizerSpec spec_;
  bool treat_whitespace_as_suffix_;
  const PrefixMatcher* matcher_;
  Charsmap charsmap_;
};

}  // namespace poslens::spm
