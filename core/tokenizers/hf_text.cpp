#include "core/tokenizers/hf_text.h"

#include <unicode/uchar.h>

namespace poslens::hf {

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

size_t invalid_utf8_at(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) { ++i; continue; }
    size_t n;
    char32_t min;
    if ((b >> 5) == 0x6) { n = 2; min = 0x80; }
    else if ((b >> 4) == 0xE) { n = 3; min = 0x800; }
    else if ((b >> 3) == 0x1E) { n = 4; min = 0x10000; }
    else return i;
    if (i + n > s.size()) return i;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return i;
    size_t len;
    const char32_t c = next_char(s, i, &len);
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return i;
    i += n;
  }
  return std::string::npos;
}

bool is_whitespace(char32_t c) { return u_isUWhiteSpace(static_cast<UChar32>(c)) != 0; }

bool is_numeric(char32_t c) {
  const auto type = u_charType(static_cast<UChar32>(c));
  return type == U_DECIMAL_DIGIT_NUMBER || type == U_LETTER_NUMBER || type == U_OTHER_NUMBER;
}

int unicode8_category(char32_t c) {
  // The code points whose category differs between Unicode 8.0 and later versions, among
  // those unicode_categories 0.1.1 lists (checked against its tables for Cc, Cf, Mn and P*).
  switch (c) {
    case 0x1734: return U_NON_SPACING_MARK;     // HANUNOO SIGN PAMUDPOD: Mc since 14.0
    case 0x1885: case 0x1886: return U_OTHER_LETTER;  // MONGOLIAN ALI GALI BALUDA: Mn since 9.0
    case 0xA9BD: return U_COMBINING_SPACING_MARK;  // JAVANESE CONSONANT SIGN KERET: Mn since 12.0
    case 0x111C9: return U_OTHER_PUNCTUATION;   // SHARADA SANDHI MARK: Mn since 11.0
    case 0x166D: return U_OTHER_PUNCTUATION;    // CANADIAN SYLLABICS CHI SIGN: So since 12.0
    default: break;
  }
  UVersionInfo age;
  u_charAge(static_cast<UChar32>(c), age);
  if (age[0] > 8) return U_UNASSIGNED;
  return u_charType(static_cast<UChar32>(c));
}

bool is_punctuation(char32_t c) {
  if (c < 0x80) return c > 0x20 && c < 0x7F && !(c >= '0' && c <= '9') &&
                       !((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
  switch (unicode8_category(c)) {
    case U_CONNECTOR_PUNCTUATION: case U_DASH_PUNCTUATION: case U_START_PUNCTUATION:
    case U_END_PUNCTUATION: case U_INITIAL_PUNCTUATION: case U_FINAL_PUNCTUATION:
    case U_OTHER_PUNCTUATION:
      return true;
    default:
      return false;
  }
}

bool is_word(char32_t c) {
  const auto u = static_cast<UChar32>(c);
  if (u_hasBinaryProperty(u, UCHAR_ALPHABETIC) || u_hasBinaryProperty(u, UCHAR_JOIN_CONTROL))
    return true;
  const auto mask = U_GET_GC_MASK(u);
  return (mask & (U_GC_M_MASK | U_GC_ND_MASK | U_GC_PC_MASK)) != 0;
}

}  // namespace poslens::hf
