// tokenizer.json {"type": "BertNormalizer"}: HF tokenizers/src/normalizers/bert.rs. Its
// character classes come from Rust's char (whitespace) and the unicode_categories crate
// (control, non-spacing mark: Unicode 8.0 tables, hf_text.h unicode8_category).
#include <unicode/uchar.h>

#include "core/tokenizers/hf_components.h"

namespace poslens::hf {
namespace {

/// bert.rs is_whitespace: \t, \n, \r or Rust's char::is_whitespace.
bool bert_whitespace(char32_t c) {
  return c == U'\t' || c == U'\n' || c == U'\r' || is_whitespace(c);
}

/// bert.rs is_control: unicode_categories' is_other (Cc, Cf, Co), except \t, \n and \r.
bool bert_control(char32_t c) {
  if (c == U'\t' || c == U'\n' || c == U'\r') return false;
  const int category = unicode8_category(c);
  return category == U_CONTROL_CHAR || category == U_FORMAT_CHAR || category == U_PRIVATE_USE_CHAR;
}

/// bert.rs is_chinese_char: the CJK Unified Ideographs blocks and their extensions.
bool chinese_char(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

class BertNormalizer : public Normalizer {
 public:
  BertNormalizer(bool clean_text, bool handle_chinese_chars, bool strip_accents, bool lowercase)
      : clean_text_(clean_text), handle_chinese_chars_(handle_chinese_chars),
        strip_accents_(strip_accents), lowercase_(lowercase) {}

  void normalize(NormalizedText& text) const override {
    if (clean_text_) {
      text.filter([](char32_t c) { return !(c == 0 || c == 0xFFFD || bert_control(c)); });
      text.map([](char32_t c) { return bert_whitespace(c) ? U' ' : c; });
    }
    if (handle_chinese_chars_) {
      std::vector<CharChange> dest;
      bool any = false;
      for (size_t i = 0; i < text.text.size();) {
        size_t n;
        const char32_t c = next_char(text.text, i, &n);
        i += n;
        if (chinese_char(c)) {
          dest.push_back({U' ', 0});
          dest.push_back({c, 1});
          dest.push_back({U' ', 1});
          any = true;
        } else {
          dest.push_back({c, 0});
        }
      }
      if (any) text.transform(dest, 0);  // identity otherwise
    }
    if (strip_accents_) {
      text.normalize(NormalizedText::Form::NFD);
      text.filter([](char32_t c) { return unicode8_category(c) != U_NON_SPACING_MARK; });
    }
    if (lowercase_) text.lowercase();
  }
  std::string name() const override { return "BertNormalizer"; }

 private:
  bool clean_text_, handle_chinese_chars_, strip_accents_, lowercase_;
};

}  // namespace

std::unique_ptr<Normalizer> read_bert_normalizer(const Field& field) {
  const bool lowercase = field.bool_or("lowercase", true);
  // strip_accents: null (or absent) follows lowercase, as bert.rs unwrap_or(lowercase)
  const bool strip_accents = field.bool_or("strip_accents", lowercase);
  return std::make_unique<BertNormalizer>(field.bool_or("clean_text", true),
                                          field.bool_or("handle_chinese_chars", true),
                                          strip_accents, lowercase);
}

}  // namespace poslens::hf
