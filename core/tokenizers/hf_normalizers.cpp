// tokenizer.json "normalizer": HF tokenizers/src/normalizers/{unicode,utils,strip,prepend,
// replace}.rs here; BertNormalizer in hf_bert_normalizer.cpp, Precompiled (SentencePiece's
// compiled charsmap) in hf_precompiled.cpp.
#include <unicode/uchar.h>

#include "core/base/text.h"
#include "core/tokenizers/hf_components.h"
#include "core/tokenizers/hf_regex.h"

namespace poslens::hf {
namespace {

class SequenceNormalizer : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> parts)
      : parts_(std::move(parts)) {}
  void normalize(NormalizedText& text) const override {
    for (const auto& p : parts_) p->normalize(text);
  }
  std::string name() const override {
    std::string s = "Sequence[";
    for (size_t i = 0; i < parts_.size(); ++i) s += (i ? ", " : "") + parts_[i]->name();
    return s + "]";
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

class UnicodeNormalizer : public Normalizer {
 public:
  UnicodeNormalizer(NormalizedText::Form form, std::string name) : form_(form), name_(std::move(name)) {}
  void normalize(NormalizedText& text) const override { text.normalize(form_); }
  std::string name() const override { return name_; }

 private:
  NormalizedText::Form form_;
  std::string name_;
};

class LowercaseNormalizer : public Normalizer {
 public:
  void normalize(NormalizedText& text) const override { text.lowercase(); }
  std::string name() const override { return "Lowercase"; }
};

class StripNormalizer : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  void normalize(NormalizedText& text) const override { text.strip(left_, right_); }
  std::string name() const override { return "Strip"; }

 private:
  bool left_, right_;
};

/// HF StripAccents: removes combining marks (general category M) with NormalizedString::filter.
class StripAccentsNormalizer : public Normalizer {
 public:
  void normalize(NormalizedText& text) const override {
    text.filter(
        [](char32_t c) { return (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_M_MASK) == 0; });
  }
  std::string name() const override { return "StripAccents"; }
};

class PrependNormalizer : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  void normalize(NormalizedText& text) const override {
    if (!text.empty()) text.prepend(prefix_);
  }
  std::string name() const override { return "Prepend"; }

 private:
  std::string prefix_;
};

class ReplaceNormalizer : public Normalizer {
 public:
  ReplaceNormalizer(const std::string& pattern, std::string content, const std::string& where)
      : regex_(pattern, where), content_(std::move(content)) {}
  void normalize(NormalizedText& text) const override {
    if (text.empty()) return;
    text.replace(regex_.find_matches(text.text), content_);
  }
  std::string name() const override { return "Replace"; }

 private:
  Regex regex_;
  std::string content_;
};

}  // namespace

std::string read_pattern(const Field& field) {
  field.require_object();
  if (field.json().size() != 1) field.fail("must be {\"String\": ...} or {\"Regex\": ...}");
  if (field.has("String")) return Regex::escape(field["String"].string());
  if (field.has("Regex")) return field["Regex"].string();
  field.fail("must be {\"String\": ...} or {\"Regex\": ...}");
}

std::unique_ptr<Normalizer> read_normalizer(const Field& field) {
  const std::string type = field["type"].string();
  if (type == "Sequence") {
    const Field list = field["normalizers"];
    std::vector<std::unique_ptr<Normalizer>> parts;
    for (size_t i = 0; i < list.array_size(); ++i) parts.push_back(read_normalizer(list.at(i)));
    return std::make_unique<SequenceNormalizer>(std::move(parts));
  }
  if (type == "NFC") return std::make_unique<UnicodeNormalizer>(NormalizedText::Form::NFC, type);
  if (type == "NFD") return std::make_unique<UnicodeNormalizer>(NormalizedText::Form::NFD, type);
  if (type == "NFKC") return std::make_unique<UnicodeNormalizer>(NormalizedText::Form::NFKC, type);
  if (type == "NFKD") return std::make_unique<UnicodeNormalizer>(NormalizedText::Form::NFKD, type);
  if (type == "Lowercase") return std::make_unique<LowercaseNormalizer>();
  if (type == "StripAccents") return std::make_unique<StripAccentsNormalizer>();
  if (type == "Strip")
    return std::make_unique<StripNormalizer>(field["strip_left"].boolean(),
                                             field["strip_right"].boolean());
  if (type == "Prepend") return std::make_unique<PrependNormalizer>(field["prepend"].string());
  if (type == "Replace")
    return std::make_unique<ReplaceNormalizer>(read_pattern(field["pattern"]),
                                               field["content"].string(),
                                               field.file() + ": " + field.path() + " (Replace)");
  if (type == "BertNormalizer") return read_bert_normalizer(field);
  if (type == "Precompiled") return read_precompiled_normalizer(field);
  field["type"].fail("normalizer type " + poslens::quoted(type) + " is not supported");
}

}  // namespace poslens::hf
