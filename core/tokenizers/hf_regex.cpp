#include "core/tokenizers/hf_regex.h"

#include <mutex>

#include <oniguruma.h>

#include "core/base/error.h"
#include "core/tokenizers/hf_text.h"

namespace poslens::hf {

struct Regex::Impl {
  regex_t* regex = nullptr;
};

namespace {
void initialise_oniguruma() {
  static std::once_flag once;
  std::call_once(once, [] {
    OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
    onig_initialize(encodings, 1);
  });
}
}  // namespace

Regex::Regex(const std::string& pattern, const std::string& where)
    : impl_(std::make_unique<Impl>()), pattern_(pattern) {
  initialise_oniguruma();
  if (invalid_utf8_at(pattern) != std::string::npos)
    throw Error(where + ": regex pattern is not valid UTF-8");
  OnigErrorInfo info;
  const auto* begin = reinterpret_cast<const OnigUChar*>(pattern.data());
  const int rc = onig_new(&impl_->regex, begin, begin + pattern.size(), ONIG_OPTION_NONE,
                          ONIG_ENCODING_UTF8, ONIG_SYNTAX_RUBY, &info);
  if (rc != ONIG_NORMAL) {
    OnigUChar message[ONIG_MAX_ERROR_MESSAGE_LEN];
    onig_error_code_to_str(message, rc, &info);
    impl_->regex = nullptr;
    throw Error(where + ": regex /" + pattern + "/ does not compile: " +
                reinterpret_cast<const char*>(message));
  }
}

Regex::~Regex() {
  if (impl_ && impl_->regex) onig_free(impl_->regex);
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
  OnigRegion* region = onig_region_new();
  const auto* begin = reinterpret_cast<const OnigUChar*>(text.data());
  const auto* end = begin + text.size();
  size_t last_end = 0;
  bool have_last = false;
  size_t last_match_end = 0;
  while (last_end <= text.size()) {
    onig_region_clear(region);
    const int r = onig_search(impl_->regex, begin, end, begin + last_end, end, region,
                              ONIG_OPTION_NONE);
    if (r < 0) break;  // ONIG_MISMATCH, or an error (treated as no further match)
    const auto s = static_cast<size_t>(region->beg[0]);
    const auto e = static_cast<size_t>(region->end[0]);
    if (s == e && have_last && last_match_end == e) {
      last_end += last_end < text.size() ? char_length(static_cast<unsigned char>(text[last_end])) : 1;
      continue;
    }
    last_end = e;
    have_last = true;
    last_match_end = e;
    out.emplace_back(s, e);
  }
  onig_region_free(region, 1);
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
