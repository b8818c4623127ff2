#pragma once
// Regular expressions as HF's `tokenizers` uses them (its SysRegex is the `onig` crate: Ruby
// syntax, UTF-8), run with PCRE2 with the options that give HF's patterns Oniguruma's meaning
// (hf_regex.cpp says why not Oniguruma itself). Used by the Split and ByteLevel pre-tokenizers
// and the Replace normalizer / decoder. Source: tokenizers/src/utils/onig.rs, tokenizer/pattern.rs.
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace poslens::hf {

class Regex {
 public:
  /// Compiles `pattern`; throws poslens::Error "<where>: regex /.../ does not compile: <why>".
  Regex(const std::string& pattern, const std::string& where);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  /// A pattern that matches `literal` exactly (HF: regex::escape of a String pattern).
  static std::string escape(const std::string& literal);

  /// Byte ranges [start, end) of the successive matches in `text`, as the onig crate's
  /// find_iter: searching resumes at the end of each match; an empty match right at the end of
  /// the previous one is skipped by one character.
  void find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const;

  /// HF's Pattern::find_matches: `text` cut into consecutive pieces, each flagged as a match or
  /// not; an empty text gives one empty non-match.
  std::vector<std::pair<std::pair<size_t, size_t>, bool>> find_matches(std::string_view text) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string pattern_;
};

}  // namespace poslens::hf
