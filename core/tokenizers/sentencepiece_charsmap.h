#pragma once
// SentencePiece's precompiled character map (normalizer_spec.precompiled_charsmap, e.g.
// nmt_nfkc): <uint32 LE trie size in bytes><darts-clone double-array trie over UTF-8 byte
// strings><NUL-separated replacement strings>. Read by SentencePiece's own normaliser
// (sentencepiece_normalizer.h, longest match) and by HF's Precompiled normalizer
// (hf_precompiled.cpp, spm_precompiled's first match). Every unit read is bounds-checked: the
// blob comes from an untrusted file.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace poslens::spm {

class Charsmap {
 public:
  /// How the replacement strings are located after the trie. SentencePiece (normalizer.cc)
  /// starts them at 4 + trie size; HF's spm_precompiled reads trie size / 4 whole units and
  /// starts them right after (the two differ only for a size that is not a multiple of 4).
  enum class Layout { SentencePiece, SpmPrecompiled };

  Charsmap() = default;
  /// Parses `blob`; an empty blob gives an empty map. Throws poslens::Error "<where>: ..." for
  /// a blob of 4 bytes or less, or a trie size past its end.
  Charsmap(std::string_view blob, Layout layout, const std::string& where);

  bool empty() const { return units_.empty(); }
  /// The replacement strings, NUL-separated (spm_precompiled requires them to be UTF-8).
  std::string_view replacements() const { return replacements_; }

  /// darts-clone commonPrefixSearch: calls `visit(length, value)` for each key that is a
  /// prefix of `key`, shortest first, until `visit` returns false. `stop_at_nul`: a NUL byte in
  /// `key` ends the search (spm_precompiled; SentencePiece passes an explicit length).
  template <class Visit>
  void common_prefix_search(std::string_view key, bool stop_at_nul, Visit&& visit) const;

  /// The NUL-terminated replacement starting at `value`, clipped to the blob; empty when
  /// `value` is past its end.
  std::string_view replacement(uint32_t value) const;

 private:
  static bool has_leaf(uint32_t u) { return ((u >> 8) & 1) == 1; }
  static uint32_t value_of(uint32_t u) { return u & ((1u << 31) - 1); }
  static uint32_t label(uint32_t u) { return u & ((1u << 31) | 0xFF); }
  static uint32_t offset(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }

  std::vector<uint32_t> units_;  // double-array units
  std::string replacements_;
};

template <class Visit>
void Charsmap::common_prefix_search(std::string_view key, bool stop_at_nul, Visit&& visit) const {
  if (units_.empty()) return;
  const std::size_t units = units_.size();
  std::size_t node = offset(units_[0]);
  for (std::size_t i = 0; i < key.size(); ++i) {
    const auto c = static_cast<unsigned char>(key[i]);
    if (stop_at_nul && c == 0) return;
    node ^= c;
    if (node >= units) return;
    const uint32_t unit = units_[node];
    if (label(unit) != c) return;
    node ^= offset(unit);
    if (has_leaf(unit)) {
      if (node >= units) return;
      if (!visit(i + 1, value_of(units_[node]))) return;
    }
  }
}

}  // namespace poslens::spm
