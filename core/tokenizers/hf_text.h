#pragma once
// UTF-8 and Unicode character classes for the HF tokenizer.json pipeline (hf_tokenizer.h).
// Character classes come from ICU and match what HF's Rust `tokenizers` asks of Rust's `char`:
//   is_whitespace  Rust char::is_whitespace            = Unicode White_Space (u_isUWhiteSpace)
//   is_numeric     Rust char::is_numeric               = general category Nd, Nl or No
//   is_punctuation HF pre_tokenizers/punctuation.rs is_punc: ASCII punctuation or category P*
//                  as the unicode_categories crate gives it (Unicode 8.0, see unicode8_category)
//   is_word        Rust regex `\w` (Unicode)           = Alphabetic, M*, Nd, Pc, Join_Control
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace poslens::hf {

/// The code point starting at s[i] and its length in bytes; `s` must be valid UTF-8 there.
inline char32_t next_char(std::string_view s, size_t i, size_t* length) {
  const auto b = static_cast<unsigned char>(s[i]);
  if (b < 0x80) { *length = 1; return b; }
  if ((b >> 5) == 0x6) {
    *length = 2;
    return (char32_t(b & 0x1F) << 6) | (static_cast<unsigned char>(s[i + 1]) & 0x3F);
  }
  if ((b >> 4) == 0xE) {
    *length = 3;
    return (char32_t(b & 0x0F) << 12) | (char32_t(static_cast<unsigned char>(s[i + 1]) & 0x3F) << 6) |
           (static_cast<unsigned char>(s[i + 2]) & 0x3F);
  }
  *length = 4;
  return (char32_t(b & 0x07) << 18) | (char32_t(static_cast<unsigned char>(s[i + 1]) & 0x3F) << 12) |
         (char32_t(static_cast<unsigned char>(s[i + 2]) & 0x3F) << 6) |
         (static_cast<unsigned char>(s[i + 3]) & 0x3F);
}

/// Bytes of the UTF-8 sequence led by byte `b` (1 for a continuation byte, as a fallback).
inline size_t char_length(unsigned char b) {
  return b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 1;
}

/// Appends code point `c` as UTF-8.
void append_utf8(std::string& out, char32_t c);
/// Bytes of `c` in UTF-8.
inline size_t utf8_length(char32_t c) { return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4; }

/// Byte index of the first invalid UTF-8 sequence in `s` (overlong forms, surrogates and code
/// points past U+10FFFF included), or std::string::npos when `s` is valid UTF-8.
size_t invalid_utf8_at(std::string_view s);

bool is_whitespace(char32_t c);
bool is_numeric(char32_t c);
bool is_punctuation(char32_t c);
bool is_word(char32_t c);

/// The general category of `c` (ICU's UCharCategory value) as HF's `unicode_categories` crate
/// (0.1.1, tables of Unicode 8.0) gives it, which HF's Punctuation and Bert pre-tokenizers and
/// its BertNormalizer ask: ICU's category for characters assigned by Unicode 8.0, with the six
/// whose category changed since then given their 8.0 one; U_UNASSIGNED (0) for newer ones.
int unicode8_category(char32_t c);

}  // namespace poslens::hf
