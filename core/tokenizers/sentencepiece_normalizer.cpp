// SentencePiece normalisation; semantics from google/sentencepiece src/normalizer.cc (v0.1.97).
// The charsmap's double array (darts-clone, bounds-checked) is sentencepiece_charsmap.cpp.
#include "core/tokenizers/sentencepiece_normalizer.h"

#include <algorithm>

namespace poslens::spm {
namespace {

bool is_trail(unsigned char c) { return (c & 0xC0) == 0x80; }
bool valid_code_point(uint32_t c) { return c < 0xD800 || (c >= 0xE000 && c <= 0x10FFFF); }

/// SentencePiece's Normalizer::kMaxTrieResultsSize: only the first 32 matches count.
constexpr std::size_t kMaxTrieResults = 32;

}  // namespace

bool utf8_valid_char(std::string_view s, std::size_t* length) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  *length = 1;
  if (p[0] < 0x80) return true;
  if (n >= 2 && (p[0] & 0xE0) == 0xC0) {
    const uint32_t c = ((p[0] & 0x1Fu) << 6) | (p[1] & 0x3Fu);
    if (is_trail(p[1]) && c >= 0x80 && valid_code_point(c)) return *length = 2, true;
  } else if (n >= 3 && (p[0] & 0xF0) == 0xE0) {
    const uint32_t c = ((p[0] & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
    if (is_trail(p[1]) && is_trail(p[2]) && c >= 0x800 && valid_code_point(c))
      return *length = 3, true;
  } else if (n >= 4 && (p[0] & 0xF8) == 0xF0) {
    const uint32_t c = ((p[0] & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) |
                       ((p[2] & 0x3Fu) << 6) | (p[3] & 0x3Fu);
    if (is_trail(p[1]) && is_trail(p[2]) && is_trail(p[3]) && c >= 0x10000 &&
        valid_code_point(c))
      return *length = 4, true;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// PrefixMatcher: a byte trie with sorted child lists (user-defined pieces are few and short).

PrefixMatcher::PrefixMatcher(const std::vector<std::string_view>& words) : nodes_(1) {
  for (const std::string_view w : words) {
    uint32_t at = 0;
    for (const char ch : w) {
      const auto c = static_cast<unsigned char>(ch);
      auto& kids = nodes_[at].children;
      auto it = std::lower_bound(kids.begin(), kids.end(), std::make_pair(c, uint32_t{0}),
                                 [](const auto& a, const auto& b) { return a.first < b.first; });
      if (it != kids.end() && it->first == c) {
        at = it->second;
      } else {
        const auto next = static_cast<uint32_t>(nodes_.size());
        kids.insert(it, {c, next});
        nodes_.emplace_back();  // invalidates `kids`; not used after this
        at = next;
      }
    }
    nodes_[at].terminal = true;
  }
}

PrefixMatcher::~PrefixMatcher() = default;

std::size_t PrefixMatcher::match(std::string_view s, bool* found) const {
  std::size_t longest = 0;
  uint32_t at = 0;
  for (std::size_t i = 0; i < s.size() && nodes_.size() > 1; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    const auto& kids = nodes_[at].children;
    auto it = std::lower_bound(kids.begin(), kids.end(), std::make_pair(c, uint32_t{0}),
                               [](const auto& a, const auto& b) { return a.first < b.first; });
    if (it == kids.end() || it->first != c) break;
    at = it->second;
    if (nodes_[at].terminal) longest = i + 1;
  }
  *found = longest > 0;
  if (longest > 0) return longest;
  return std::min(s.size(), utf8_char_len(static_cast<unsigned char>(s[0])));
}

// ---------------------------------------------------------------------------------------------

Normalizer::Normalizer(const SentencePieceNormalizerSpec& spec, bool treat_whitespace_as_suffix,
                       const PrefixMatcher* matcher, const std::string& name)
    : spec_(spec), treat_whitespace_as_suffix_(treat_whitespace_as_suffix), matcher_(matcher),
      charsmap_(spec_.precompiled_charsmap, Charsmap::Layout::SentencePiece,
                name + ": normalizer_spec.precompiled_charsmap (normalizer \"" + spec_.name +
                    "\")") {}

Normalizer::~Normalizer() = default;

std::pair<std::string_view, std::size_t> Normalizer::normalize_prefix(
    std::string_view input) const {
  if (matcher_ != nullptr && !matcher_->empty()) {
    bool found = false;
    const std::size_t n = matcher_->match(input, &found);
    if (found) return {input.substr(0, n), n};
  }

  std::size_t longest_length = 0;
  uint32_t longest_value = 0;
  std::size_t results = 0;
  auto longest = [&](std::size_t length, uint32_t value) {
    if (longest_length == 0 || length > longest_length) {
      longest_length = length;
      longest_value = value;
    }
    return ++results < kMaxTrieResults;  // only the first 32 matches count
  };
  charsmap_.common_prefix_search(input, /*stop_at_nul=*/false, longest);

  if (longest_length == 0) {
    std::size_t length = 0;
    if (!utf8_valid_char(input, &length)) return {"\xEF\xBF\xBD", 1};  // U+FFFD for one byte
    return {input.substr(0, length), length};
  }
  // The replacement is NUL-terminated inside the blob; a value or string past the end (a
  // broken file) is clipped to the blob.
  return {charsmap_.replacement(longest_value), longest_length};
}

void Normalizer::normalize(std::string_view input, std::string& normalized,
                           std::vector<std::size_t>& norm_to_orig) const {
  normalized.clear();
  norm_to_orig.clear();
  if (input.empty()) return;

  std::size_t consumed = 0;
  if (spec_.remove_extra_whitespaces) {  // leading spaces
    while (!input.empty()) {
      const auto p = normalize_prefix(input);
      if (p.first != " ") break;
      input.remove_prefix(p.second);
      consumed += p.second;
    }
  }
  if (input.empty()) return;

  normalized.reserve(input.size() * 3);
  norm_to_orig.reserve(input.size() * 3);
  auto add_ws = [&] {
    if (spec_.escape_whitespaces) {
      normalized.append(kSpaceSymbol);
      norm_to_orig.insert(norm_to_orig.end(), kSpaceSymbol.size(), consumed);
    } else {
      normalized.push_back(' ');
      norm_to_orig.push_back(consumed);
    }
  };

  if (!treat_whitespace_as_suffix_ && spec_.add_dummy_prefix) add_ws();

  bool is_prev_space = spec_.remove_extra_whitespaces;
  while (!input.empty()) {
    const auto p = normalize_prefix(input);
    std::string_view sp = p.first;
    while (is_prev_space && !sp.empty() && sp.front() == ' ') sp.remove_prefix(1);
    if (!sp.empty()) {
      for (const char c : sp) {
        if (spec_.escape_whitespaces && c == ' ') {
          normalized.append(kSpaceSymbol);
          norm_to_orig.insert(norm_to_orig.end(), kSpaceSymbol.size(), consumed);
        } else {
          normalized.push_back(c);
          norm_to_orig.push_back(consumed);
        }
      }
      is_prev_space = sp.back() == ' ';
    }
    consumed += p.second;
    input.remove_prefix(p.second);
    if (!spec_.remove_extra_whitespaces) is_prev_space = false;
  }

  if (spec_.remove_extra_whitespaces) {  // trailing spaces
    const std::string_view space = spec_.escape_whitespaces ? kSpaceSymbol : std::string_view(" ");
    while (normalized.size() >= space.size() &&
           std::string_view(normalized).substr(normalized.size() - space.size()) == space) {
      const std::size_t length = normalized.size() - space.size();
      consumed = norm_to_orig[length];
      normalized.resize(length);
      norm_to_orig.resize(length);
    }
  }

  if (treat_whitespace_as_suffix_ && spec_.add_dummy_prefix) add_ws();
  norm_to_orig.push_back(consumed);
}

}  // namespace poslens::spm
