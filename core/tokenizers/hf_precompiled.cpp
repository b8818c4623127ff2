// tokenizer.json {"type": "Precompiled", "precompiled_charsmap": base64}: HF
// tokenizers/src/normalizers/precompiled.rs over huggingface/spm_precompiled (the charsmap's
// double array: sentencepiece_charsmap.h). Not SentencePiece's own normaliser: HF looks up each
// extended grapheme cluster shorter than 6 bytes whole, taking the *first* (shortest) charsmap
// key that is a prefix of it, else each of its characters alone; offsets follow HF's
// NormalizedString::transform, quirks included (a character removed at the very start shifts
// the alignment of those after it, as in HF).
#include <memory>

#include <unicode/brkiter.h>
#include <unicode/utext.h>

#include "core/base/error.h"
#include "core/tokenizers/hf_components.h"
#include "core/tokenizers/sentencepiece_charsmap.h"

namespace poslens::hf {
namespace {

/// Standard base64 (RFC 4648 alphabet, '=' padding required as Rust's base64 STANDARD engine
/// does). Returns false for anything else.
bool decode_base64(const std::string& in, std::string& out) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  if (in.size() % 4 != 0) return false;
  out.clear();
  out.reserve(in.size() / 4 * 3);
  for (size_t i = 0; i < in.size(); i += 4) {
    const bool last = i + 4 == in.size();
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = in[i + static_cast<size_t>(k)];
      if (c == '=' && last && k >= 2) {
        v[k] = 0;
        ++pad;
        continue;
      }
      if (pad > 0) return false;  // data after padding
      v[k] = value(c);
      if (v[k] < 0) return false;
    }
    const uint32_t n = (uint32_t(v[0]) << 18) | (uint32_t(v[1]) << 12) | (uint32_t(v[2]) << 6) |
                       uint32_t(v[3]);
    out += static_cast<char>(n >> 16);
    if (pad < 2) out += static_cast<char>((n >> 8) & 0xFF);
    if (pad < 1) out += static_cast<char>(n & 0xFF);
    // Rust's base64 rejects non-canonical trailing bits
    if ((pad == 1 && (n & 0xFF) != 0) || (pad == 2 && (n & 0xFFFF) != 0)) return false;
  }
  return true;
}

/// precompiled.rs replace(): `new_part` replaces the characters of `old_part`.
void replace_chars(std::vector<CharChange>& dest, size_t old_count, std::string_view new_part) {
  size_t new_count = 0;
  for (size_t i = 0; i < new_part.size();) {
    size_t n;
    dest.push_back({next_char(new_part, i, &n), 0});
    i += n;
    ++new_count;
  }
  const auto diff = static_cast<int64_t>(new_count) - static_cast<int64_t>(old_count);
  if (diff > 0) {
    for (int64_t k = 0; k < diff; ++k) dest[dest.size() - 1 - static_cast<size_t>(k)].change = 1;
  } else if (diff < 0 && !dest.empty()) {
    dest.back().change += static_cast<int>(diff);
  }
}

size_t count_chars(std::string_view s) {
  size_t n = 0;
  for (unsigned char b : s) n += (b & 0xC0) != 0x80;
  return n;
}

class PrecompiledNormalizer : public Normalizer {
 public:
  explicit PrecompiledNormalizer(spm::Charsmap charsmap) : charsmap_(std::move(charsmap)) {}

  void normalize(NormalizedText& text) const override {
    if (text.empty()) return;
    const std::string& s = text.text;
    std::vector<CharChange> dest;
    dest.reserve(s.size());
    bool modified = false;
    for_each_grapheme(s, [&](size_t begin, size_t end) {
      const std::string_view grapheme(s.data() + begin, end - begin);
      std::string_view norm;
      if (grapheme.size() < 6 && transform(grapheme, &norm)) {
        modified = true;
        replace_chars(dest, count_chars(grapheme), norm);
        return;
      }
      for (size_t i = 0; i < grapheme.size();) {
        size_t n;
        const char32_t c = next_char(grapheme, i, &n);
        if (transform(grapheme.substr(i, n), &norm)) {
          modified = true;
          replace_chars(dest, 1, norm);
        } else {
          dest.push_back({c, 0});
        }
        i += n;
      }
    });
    if (modified) text.transform(dest, 0);
  }
  std::string name() const override { return "Precompiled"; }

 private:
  /// spm_precompiled Precompiled::transform: the replacement of the first (shortest) key that
  /// is a prefix of `chunk`.
  bool transform(std::string_view chunk, std::string_view* out) const {
    bool found = false;
    uint32_t value = 0;
    charsmap_.common_prefix_search(chunk, /*stop_at_nul=*/true, [&](size_t, uint32_t v) {
      value = v;
      found = true;
      return false;
    });
    if (!found) return false;
    const std::string_view all = charsmap_.replacements();
    // spm_precompiled slices its (UTF-8) string here and would panic off a character
    // boundary; no rule is used instead.
    if (value < all.size() && (static_cast<unsigned char>(all[value]) & 0xC0) == 0x80) return false;
    *out = charsmap_.replacement(value);
    return true;
  }

  /// Extended grapheme clusters (unicode-segmentation's graphemes(true)) from ICU.
  template <class F>
  static void for_each_grapheme(const std::string& s, F&& f) {
    thread_local std::unique_ptr<icu::BreakIterator> breaks;
    UErrorCode status = U_ZERO_ERROR;
    if (!breaks) {
      breaks.reset(icu::BreakIterator::createCharacterInstance(icu::Locale::getRoot(), status));
      if (U_FAILURE(status) || !breaks)
        throw Error(std::string("ICU grapheme break iterator unavailable: ") + u_errorName(status));
    }
    UText* ut = utext_openUTF8(nullptr, s.data(), static_cast<int64_t>(s.size()), &status);
    if (U_FAILURE(status)) throw Error(std::string("ICU UText: ") + u_errorName(status));
    breaks->setText(ut, status);
    if (U_FAILURE(status)) {
      utext_close(ut);
      throw Error(std::string("ICU break iterator: ") + u_errorName(status));
    }
    int32_t begin = breaks->first();
    for (int32_t end = breaks->next(); end != icu::BreakIterator::DONE; end = breaks->next()) {
      f(static_cast<size_t>(begin), static_cast<size_t>(end));
      begin = end;
    }
    utext_close(ut);
  }

  spm::Charsmap charsmap_;
};

}  // namespace

std::unique_ptr<Normalizer> read_precompiled_normalizer(const Field& field) {
  const Field map = field["precompiled_charsmap"];
  std::string blob;
  if (!decode_base64(map.string(), blob)) map.fail("is not valid base64");
  if (blob.empty()) map.fail("0 bytes, too short");  // HF cannot parse it either
  const std::string where = field.file() + ": " + map.path();
  spm::Charsmap charsmap(blob, spm::Charsmap::Layout::SpmPrecompiled, where);
  if (invalid_utf8_at(charsmap.replacements()) != std::string::npos)
    map.fail("its normalized strings are not valid UTF-8");
  return std::make_unique<PrecompiledNormalizer>(std::move(charsmap));
}

}  // namespace poslens::hf
