#include "core/tokenizers/hf_normalized.h"

#include <algorithm>
#include <memory>

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/ustring.h>

#include "core/base/error.h"

namespace poslens::hf {

NormalizedText NormalizedText::from_input(const std::string& input, size_t begin, size_t end) {
  NormalizedText out;
  out.text.assign(input, begin, end - begin);
  out.align.resize(end - begin);
  for (size_t i = begin; i < end;) {
    const size_t n = std::min(char_length(static_cast<unsigned char>(input[i])), end - i);
    const Span span{static_cast<uint32_t>(i), static_cast<uint32_t>(i + n)};
    for (size_t k = 0; k < n; ++k) out.align[i - begin + k] = span;
    i += n;
  }
  out.original = {static_cast<uint32_t>(begin), static_cast<uint32_t>(end)};
  return out;
}

Span NormalizedText::to_original(size_t start, size_t end) const {
  if (start == end || end > align.size() || start > end) {
    const auto at = static_cast<uint32_t>(original.start + start);
    return {at, at};
  }
  return {align[start].start, align[end - 1].end};
}

NormalizedText NormalizedText::slice(size_t start, size_t end) const {
  NormalizedText out;
  out.text.assign(text, start, end - start);
  out.align.assign(align.begin() + static_cast<std::ptrdiff_t>(start),
                   align.begin() + static_cast<std::ptrdiff_t>(end));
  out.original = to_original(start, end);
  return out;
}

void NormalizedText::transform(size_t start, size_t end, const std::vector<CharChange>& dest,
                               size_t initial_offset) {
  size_t cursor = start;  // the next old character that a change consumes
  auto take = [&]() -> size_t {
    if (cursor >= end) return 0;
    const size_t n = char_length(static_cast<unsigned char>(text[cursor]));
    cursor += n;
    return n;
  };
  auto align_at = [&](size_t i) -> Span {
    if (i < align.size()) return align[i];
    return align.empty() ? Span{original.end, original.end} : align.back();
  };
  size_t offset = start;
  for (size_t k = 0; k < initial_offset; ++k) offset += take();

  std::string new_text;
  std::vector<Span> new_align;
  new_text.reserve(dest.size());
  new_align.reserve(dest.size());
  for (const auto& [c, change] : dest) {
    const Span a = change > 0 ? (offset < 1 ? Span{original.start, original.start}
                                            : align_at(offset - 1))
                              : align_at(offset);
    if (change <= 0) offset += take();
    for (int k = 0; k < -change; ++k) offset += take();
    const size_t before = new_text.size();
    append_utf8(new_text, c);
    new_align.insert(new_align.end(), new_text.size() - before, a);
  }
  text.replace(start, end - start, new_text);
  align.erase(align.begin() + static_cast<std::ptrdiff_t>(start),
              align.begin() + static_cast<std::ptrdiff_t>(end));
  align.insert(align.begin() + static_cast<std::ptrdiff_t>(start), new_align.begin(),
               new_align.end());
}

void NormalizedText::prepend(const std::string& s) {
  if (text.empty() || s.empty()) return;
  size_t first_length;
  const char32_t first = next_char(text, 0, &first_length);
  std::vector<CharChange> dest;
  for (size_t i = 0; i < s.size();) {
    size_t n;
    dest.push_back({next_char(s, i, &n), dest.empty() ? 0 : 1});
    i += n;
  }
  dest.push_back({first, 1});
  transform(0, first_length, dest, 0);
}

void NormalizedText::replace(const Matches& matches, const std::string& content) {
  std::string new_text;
  std::vector<Span> new_align;
  new_text.reserve(text.size());
  new_align.reserve(align.size());
  size_t last_end = 0;
  for (const auto& [range, is_match] : matches) {
    if (!is_match) continue;
    const auto [start, end] = range;
    new_text.append(text, last_end, start - last_end);
    new_align.insert(new_align.end(), align.begin() + static_cast<std::ptrdiff_t>(last_end),
                     align.begin() + static_cast<std::ptrdiff_t>(start));
    // Every inserted character counts as "added" after the removed ones: HF aligns it with the
    // byte before the end of the match.
    const Span a = end < 1 ? Span{original.start, original.start} : align[end - 1];
    new_text += content;
    new_align.insert(new_align.end(), content.size(), a);
    last_end = end;
  }
  new_text.append(text, last_end, std::string::npos);
  new_align.insert(new_align.end(), align.begin() + static_cast<std::ptrdiff_t>(last_end),
                   align.end());
  text = std::move(new_text);
  align = std::move(new_align);
}

void NormalizedText::strip(bool left, bool right) {
  std::vector<std::pair<char32_t, size_t>> chars;  // code point, byte position
  for (size_t i = 0; i < text.size();) {
    size_t n;
    chars.push_back({next_char(text, i, &n), i});
    i += n;
  }
  size_t leading = 0, trailing = 0;
  if (left)
    while (leading < chars.size() && is_whitespace(chars[leading].first)) ++leading;
  if (right)
    while (trailing < chars.size() && is_whitespace(chars[chars.size() - 1 - trailing].first))
      ++trailing;
  if (leading == 0 && trailing == 0) return;
  std::vector<CharChange> dest;
  for (size_t i = leading; i + trailing < chars.size(); ++i) dest.push_back({chars[i].first, 0});
  if (!dest.empty()) dest.back().change = -static_cast<int>(trailing);
  transform(dest, leading);
}

void NormalizedText::lowercase() {
  bool ascii_only = true;
  for (char c : text) ascii_only &= static_cast<unsigned char>(c) < 0x80;
  if (ascii_only) {  // one byte each: the alignment stays
    for (char& c : text)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return;
  }
  std::vector<CharChange> dest;
  for (size_t i = 0; i < text.size();) {
    size_t n;
    const char32_t c = next_char(text, i, &n);
    i += n;
    UChar source[2];
    int32_t source_length = 0;
    U16_APPEND_UNSAFE(source, source_length, static_cast<UChar32>(c));
    UChar lower[16];
    UErrorCode status = U_ZERO_ERROR;
    const int32_t length = u_strToLower(lower, 16, source, source_length, "", &status);
    if (U_FAILURE(status)) {
      dest.push_back({c, 0});
      continue;
    }
    bool first = true;
    for (int32_t k = 0; k < length;) {
      UChar32 out;
      U16_NEXT(lower, k, length, out);
      dest.push_back({static_cast<char32_t>(out), first ? 0 : 1});
      first = false;
    }
  }
  transform(dest, 0);
}

void NormalizedText::normalize(Form form) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* normalizer =
      form == Form::NFC    ? icu::Normalizer2::getNFCInstance(status)
      : form == Form::NFD  ? icu::Normalizer2::getNFDInstance(status)
      : form == Form::NFKC ? icu::Normalizer2::getNFKCInstance(status)
                           : icu::Normalizer2::getNFKDInstance(status);
  const bool compatible = form == Form::NFKC || form == Form::NFKD;
  const icu::Normalizer2* decomposer = compatible ? icu::Normalizer2::getNFKDInstance(status)
                                                  : icu::Normalizer2::getNFDInstance(status);
  const icu::Normalizer2* composer = icu::Normalizer2::getNFCInstance(status);
  if (U_FAILURE(status) || normalizer == nullptr || decomposer == nullptr || composer == nullptr)
    throw Error(std::string("ICU normalizer unavailable: ") + u_errorName(status));
  // Text already in the form comes out unchanged, every character replacing itself.
  const auto whole = icu::UnicodeString::fromUTF8(text);
  if (normalizer->isNormalized(whole, status) && U_SUCCESS(status)) return;

  // The characters and changes of unicode-normalization-alignments (the crate HF normalizes
  // with): each character's full decomposition, its first character replacing it and the
  // others added after it (decompose.rs); runs of non-starters stably sorted by combining class.
  struct Item {
    uint8_t ccc;
    char32_t c;
    int change;
  };
  std::vector<Item> items;
  items.reserve(text.size());
  size_t block = 0;  // where the run that is not yet in canonical order starts
  auto by_class = [](const Item& a, const Item& b) { return a.ccc < b.ccc; };
  // The crate's tables are Unicode 9.0: a character assigned later has no decomposition and
  // combining class 0 there.
  auto unicode9 = [](char32_t c) {
    UVersionInfo age;
    u_charAge(static_cast<UChar32>(c), age);
    return age[0] <= 9;
  };
  auto push = [&](char32_t c, int change) {
    const auto ccc =
        unicode9(c) ? static_cast<uint8_t>(u_getCombiningClass(static_cast<UChar32>(c))) : uint8_t{0};
    if (ccc == 0) {
      std::stable_sort(items.begin() + static_cast<std::ptrdiff_t>(block), items.end(), by_class);
      block = items.size();
    }
    items.push_back({ccc, c, change});
  };
  icu::UnicodeString decomposition;
  for (size_t i = 0; i < text.size();) {
    size_t n;
    const char32_t c = next_char(text, i, &n);
    i += n;
    if (!unicode9(c) || !decomposer->getDecomposition(static_cast<UChar32>(c), decomposition)) {
      push(c, 0);
      continue;
    }
    bool first = true;
    for (int32_t k = 0; k < decomposition.length();) {
      const UChar32 d = decomposition.char32At(k);
      push(static_cast<char32_t>(d), first ? 0 : 1);
      first = false;
      k += U16_LENGTH(d);
    }
  }
  std::stable_sort(items.begin() + static_cast<std::ptrdiff_t>(block), items.end(), by_class);

  std::vector<CharChange> dest;
  dest.reserve(items.size());
  if (form == Form::NFD || form == Form::NFKD) {
    for (const auto& item : items) dest.push_back({item.c, item.change});
    transform(dest, 0);
    return;
  }
  // recompose.rs: a starter (the composee) absorbs each following character it composes with
  // and is not blocked from; an absorbed character's change is folded into the composite's.
  bool have_composee = false;
  CharChange composee{0, 0};
  int last_ccc = -1;  // none
  std::vector<CharChange> blocked;
  auto compose = [&](char32_t a, char32_t b) {
    return composer->composePair(static_cast<UChar32>(a), static_cast<UChar32>(b));
  };
  for (const auto& [ccc, c, change] : items) {
    if (!have_composee) {
      if (ccc != 0) dest.push_back({c, change});
      else composee = {c, change}, have_composee = true;
      continue;
    }
    if (last_ccc < 0 || last_ccc < ccc) {
      const UChar32 r = compose(composee.c, c);
      if (r >= 0) {
        composee = {static_cast<char32_t>(r), composee.change + change - 1};
        continue;
      }
      if (last_ccc < 0 && ccc == 0) {
        dest.push_back(composee);
        composee = {c, change};
        continue;
      }
      blocked.push_back({c, change});
      last_ccc = ccc;
      continue;
    }
    // blocked from the composee
    if (ccc == 0) {
      dest.push_back(composee);
      dest.insert(dest.end(), blocked.begin(), blocked.end());
      blocked.clear();
      composee = {c, change};
      last_ccc = -1;
      continue;
    }
    blocked.push_back({c, change});
    last_ccc = ccc;
  }
  if (have_composee) dest.push_back(composee);
  dest.insert(dest.end(), blocked.begin(), blocked.end());
  transform(dest, 0);
}

std::vector<NormalizedText> NormalizedText::split(const Matches& matches,
                                                  SplitBehavior behavior) const {
  // (range, remove) per piece, as HF's split computes them
  std::vector<std::pair<std::pair<size_t, size_t>, bool>> pieces;
  switch (behavior) {
    case SplitBehavior::Isolated:
      for (const auto& [r, m] : matches) pieces.push_back({r, false});
      break;
    case SplitBehavior::Removed:
      pieces = matches;
      break;
    case SplitBehavior::Contiguous: {
      bool previous = false;
      for (const auto& [r, m] : matches) {
        if (m == previous && !pieces.empty()) pieces.back().first.second = r.second;
        else pieces.push_back({r, false});
        previous = m;
      }
      break;
    }
    case SplitBehavior::MergedWithPrevious: {
      bool previous = false;
      for (const auto& [r, m] : matches) {
        if (m && !previous && !pieces.empty()) pieces.back().first.second = r.second;
        else pieces.push_back({r, false});
        previous = m;
      }
      break;
    }
    case SplitBehavior::MergedWithNext: {
      bool previous = false;
      for (auto it = matches.rbegin(); it != matches.rend(); ++it) {
        const auto& [r, m] = *it;
        if (m && !previous && !pieces.empty()) pieces.back().first.first = r.first;
        else pieces.push_back({r, false});
        previous = m;
      }
      std::reverse(pieces.begin(), pieces.end());
      break;
    }
  }
  std::vector<NormalizedText> out;
  out.reserve(pieces.size());
  for (const auto& [r, remove] : pieces)
    if (!remove) out.push_back(slice(r.first, r.second));
  return out;
}

}  // namespace poslens::hf
