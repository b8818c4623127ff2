#pragma once
// HF's NormalizedString: a piece of the input after normalization, with the original byte range
// of every normalized byte, so that tokens found in normalized text get offsets in the input.
// Semantics follow tokenizers/src/tokenizer/normalizer.rs (transform_range, prepend, replace,
// split, lrstrip, slice, convert_offsets), with one change of representation: alignments hold
// absolute byte offsets into the whole input instead of offsets relative to the piece.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace poslens::hf {

/// A byte range [start, end) of the input.
struct Span {
  uint32_t start = 0;
  uint32_t end = 0;
  bool operator==(const Span& o) const { return start == o.start && end == o.end; }
};

/// How a split keeps the delimiters it found (HF SplitDelimiterBehavior).
enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

/// One piece of text cut into consecutive ranges, each flagged "matched the pattern".
using Matches = std::vector<std::pair<std::pair<size_t, size_t>, bool>>;

/// A character of the new text and what it does to the old one (HF transform_range): 0 replaces
/// the next old character, +1 is inserted, -n replaces the next old character and removes the n
/// after it.
struct CharChange {
  char32_t c;
  int change;
};

struct NormalizedText {
  std::string text;           ///< the normalized UTF-8 text
  std::vector<Span> align;    ///< per byte of `text`: the input bytes it came from
  Span original;              ///< the input bytes this piece covers

  /// The input bytes [begin, end) of `input`, unchanged (HF NormalizedString::from).
  static NormalizedText from_input(const std::string& input, size_t begin, size_t end);

  bool empty() const { return text.empty(); }
  /// The input range of normalized bytes [start, end) (HF convert_offsets + original shift).
  Span to_original(size_t start, size_t end) const;
  /// The piece of normalized bytes [start, end) (HF slice with a normalized range).
  NormalizedText slice(size_t start, size_t end) const;

  /// HF transform_range over normalized bytes [start, end): the characters of that range are
  /// replaced by `dest`; the first `initial_offset` characters of the range are removed first.
  void transform(size_t start, size_t end, const std::vector<CharChange>& dest,
                 size_t initial_offset);
  /// transform over the whole text.
  void transform(const std::vector<CharChange>& dest, size_t initial_offset) {
    transform(0, text.size(), dest, initial_offset);
  }

  /// Inserts `s` before the first character, aligned with it; nothing on an empty text.
  void prepend(const std::string& s);
  /// Replaces each flagged range of `matches` (as Regex::find_matches gives them) by `content`;
  /// the new characters align with the last byte of what they replace.
  void replace(const Matches& matches, const std::string& content);
  /// Removes leading and/or trailing whitespace (Rust char::is_whitespace).
  void strip(bool left, bool right);
  /// Unicode lowercase, per character (Rust char::to_lowercase, ICU full case mapping).
  void lowercase();
  /// HF NormalizedString::filter: removes the characters for which `keep(c)` is false; each
  /// removal is carried by the kept character before it (or skipped at the start).
  template <class Keep>
  void filter(Keep&& keep);
  /// HF NormalizedString::map: every character replaced by `f(c)`, one for one.
  template <class F>
  void map(F&& f);
  enum class Form { NFC, NFD, NFKC, NFKD };
  /// Unicode normalization as HF's unicode-normalization-alignments crate does it (its
  /// decomposition, canonical reordering and recomposition with a change per character; Unicode
  /// 9.0 tables, so characters assigned later are left alone), from ICU's data.
  void normalize(Form form);

  /// HF NormalizedString::split: the pieces `matches` cut this text into, kept, merged or
  /// dropped according to `behavior`. Empty pieces are kept (the caller drops them).
  std::vector<NormalizedText> split(const Matches& matches, SplitBehavior behavior) const;
};

/// HF Pattern::find_matches for a character predicate (Fn(char) -> bool).
template <class Predicate>
Matches find_char_matches(const std::string& text, Predicate&& is_match);

}  // namespace poslens::hf

#include "core/tokenizers/hf_text.h"

template <class Keep>
void poslens::hf::NormalizedText::filter(Keep&& keep) {
  std::vector<CharChange> dest;
  dest.reserve(text.size());
  int removed = 0;
  size_t removed_start = 0;
  bool have_last = false;
  char32_t last = 0;
  for (size_t i = 0; i < text.size();) {
    size_t n;
    const char32_t c = next_char(text, i, &n);
    i += n;
    if (keep(c)) {
      if (have_last) dest.push_back({last, -removed});
      else removed_start = static_cast<size_t>(removed);
      last = c;
      have_last = true;
      removed = 0;
    } else {
      ++removed;
    }
  }
  if (have_last) dest.push_back({last, -removed});
  transform(dest, removed_start);
}

template <class F>
void poslens::hf::NormalizedText::map(F&& f) {
  std::vector<CharChange> dest;
  dest.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t n;
    dest.push_back({f(next_char(text, i, &n)), 0});
    i += n;
  }
  transform(dest, 0);
}

template <class Predicate>
poslens::hf::Matches poslens::hf::find_char_matches(const std::string& text, Predicate&& is_match) {
  Matches out;
  if (text.empty()) {
    out.push_back({{0, 0}, false});
    return out;
  }
  size_t last_offset = 0;
  for (size_t i = 0; i < text.size();) {
    size_t n;
    const char32_t c = next_char(text, i, &n);
    if (is_match(c)) {
      if (last_offset < i) out.push_back({{last_offset, i}, false});
      out.push_back({{i, i + n}, true});
      last_offset = i + n;
    }
    i += n;
  }
  if (text.size() > last_offset) out.push_back({{last_offset, text.size()}, false});
  return out;
}
