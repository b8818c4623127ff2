#include "core/tokenizers/hf_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/base/error.h"
#include "core/tokenizers/hf_text.h"

namespace poslens::hf {

struct Regex::Impl {
  pcre2_code* code = nullptr;
};

// PCRE2 rather than Oniguruma (the engine of HF's `onig` crate): Debian's libonig exports
// POSIX `regcomp`/`regexec` that replace glibc's in the whole process (GoogleTest's and anyone
// else's regexes broke). Options give Ruby/Oniguruma's meaning to HF's patterns: UTF-8, Unicode
// classes for \s \d \w and \p{..} (UCP), `^`/`$` at line boundaries (Ruby's default).
namespace {

/// `pattern` with Oniguruma's \w spelled out: Unicode's Word (Alphabetic, Mark, Decimal_Number,
/// Connector_Punctuation, Join_Control; hf_text.h is_word), so letter numbers (Ⅻ) and other
/// alphabetic symbols (ⓜ) are word characters as in HF. PCRE2 before 10.43 (Debian 12 has
/// 10.42) leaves marks out of \w even with UCP, so HF's Whitespace pre-tokenizer
/// `\w+|[^\w\s]+` would split "e" from a combining accent.
std::string with_oniguruma_word_class(const std::string& pattern) {
  static const std::string word = "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}";
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char next = pattern[++i];
      if (next == 'w') out += in_class ? word : "[" + word + "]";
      else if (next == 'W' && !in_class) out += "[^" + word + "]";
      else (out += c) += next;
      continue;
    }
    if (c == '[' && !in_class) in_class = true;
    else if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

}  // namespace

Regex::Regex(const std::string& pattern, const std::string& where)
    : impl_(std::make_unique<Impl>()), pattern_(pattern) {
  if (invalid_utf8_at(pattern) != std::string::npos)
    throw Error(where + ": regex pattern is not valid UTF-8");
  int code = 0;
  PCRE2_SIZE offset = 0;
  const std::string translated = with_oniguruma_word_class(pattern);
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                              PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE, &code, &offset, nullptr);
  if (!impl_->code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(code, message, sizeof message);
    throw Error(where + ": regex /" + pattern + "/ does not compile at offset " +
                std::to_string(offset) + ": " + reinterpret_cast<const char*>(message));
  }
  pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE);  // optional: falls back to the interpreter
}

Regex::~Regex() {
  if (impl_ && impl_->code) pcre2_code_free(impl_->code);
}

std::string Regex::escape(const std::string& literal) {
  std::string out;
  for (char c : literal) {
    switch (c) {
      case '\\': case '.': case '+': case '*': case '?': case '(': case ')': case '|':
      case '[': case ']': case '{': case '}': case '^': case '$': case '#': case '&':
      case '-': case '~':
        out += '\\';
        out += c;
        break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      case '\f': out += "\\f"; break;
      case '\v': out += "\\v"; break;
      case ' ': out += "\\x20"; break;
      default: out += c;
    }
  }
  return out;
}

void Regex::find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const {
  out.clear();
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> match(
      pcre2_match_data_create_from_pattern(impl_->code, nullptr), &pcre2_match_data_free);
  const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  uint32_t options = 0;  // the UTF-8 check runs once, on the first search of the whole text
  size_t last_end = 0;
  bool have_last = false;
  size_t last_match_end = 0;
  while (last_end <= text.size()) {
    const int r = pcre2_match(impl_->code, subject, text.size(), last_end, options, match.get(), nullptr);
    options = PCRE2_NO_UTF_CHECK;
    if (r < 0) break;  // no further match, or an error (invalid UTF-8: treated as no match)
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.get());
    const auto s = static_cast<size_t>(ovector[0]);
    const auto e = static_cast<size_t>(ovector[1]);
    if (s == e && have_last && last_match_end == e) {
      last_end += last_end < text.size() ? char_length(static_cast<unsigned char>(text[last_end])) : 1;
      continue;
    }
    last_end = e;
    have_last = true;
    last_match_end = e;
    out.emplace_back(s, e);
  }
}

std::vector<std::pair<std::pair<size_t, size_t>, bool>> Regex::find_matches(
    std::string_view text) const {
  std::vector<std::pair<std::pair<size_t, size_t>, bool>> splits;
  if (text.empty()) {
    splits.push_back({{0, 0}, false});
    return splits;
  }
  std::vector<std::pair<size_t, size_t>> matches;
  find_all(text, matches);
  size_t prev = 0;
  for (const auto& [s, e] : matches) {
    if (prev != s) splits.push_back({{prev, s}, false});
    splits.push_back({{s, e}, true});
    prev = e;
  }
  if (prev != text.size()) splits.push_back({{prev, text.size()}, false});
  return splits;
}

}  // namespace poslens::hf
