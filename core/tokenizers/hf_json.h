#pragma once
// Checked reads of an untrusted tokenizer.json: every error names the file and the field path
// ("tokenizer.json: pre_tokenizer.pretokenizers[1].pattern: ...").
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace poslens::hf {

/// Largest tokenizer.json / vocab.json / merges.txt read (real ones are 1-20 MB).
inline constexpr std::uint64_t kMaxTokenizerFileBytes = 64ull << 20;
/// Most entries in a vocabulary, merge list or added-token list, and the largest token id.
inline constexpr int64_t kMaxVocabulary = 1 << 22;

/// base's parse_untrusted_json_sorted of a tokenizer file (fast on a 50k-entry vocabulary
/// object). Throws poslens::Error "<where>: ...".
nlohmann::json parse_tokenizer_json(const std::string& text, const std::string& where);

/// The double HF's Rust reader (serde_json without its float_roundtrip feature) gets for the
/// number written as `value`'s shortest round-trip form (how serde_json and Python write them):
/// the decimal significand as a double, then one multiplication or division by a power of ten,
/// which is off by one unit in the last place for some 17-digit numbers (about 7% of the
/// Unigram scores of a SentencePiece model). Unigram's Viterbi compares sums of these scores.
double serde_json_f64(double value);

/// One value in a JSON document with the path that leads to it, for error messages.
class Field {
 public:
  Field(const nlohmann::json& value, std::string path, std::shared_ptr<const std::string> file)
      : value_(&value), path_(std::move(path)), file_(std::move(file)) {}

  const nlohmann::json& json() const { return *value_; }
  const std::string& path() const { return path_; }
  const std::string& file() const { return *file_; }
  /// Throws poslens::Error "<file>: <path>: <what>".
  [[noreturn]] void fail(const std::string& what) const;

  bool is_null() const { return value_->is_null(); }
  /// True when the object has `key` with a non-null value.
  bool has(const char* key) const;
  /// The member `key`; fails when this is not an object or the key is absent.
  Field operator[](const char* key) const;
  /// The member `key` or a null field when absent.
  Field optional(const char* key) const;
  /// Element `i` of an array.
  Field at(size_t i) const;
  /// Elements of an array (fails for anything else); at most kMaxVocabulary.
  size_t array_size() const;
  void require_object() const;

  std::string string() const;
  bool boolean() const;
  int64_t integer() const;
  double number() const;
  /// A string holding exactly one character (Metaspace replacement, Strip content).
  char32_t character() const;

  std::string string_or(const char* key, const std::string& fallback) const;
  bool bool_or(const char* key, bool fallback) const;
  int64_t int_or(const char* key, int64_t fallback) const;

 private:
  const nlohmann::json* value_;
  std::string path_;
  std::shared_ptr<const std::string> file_;
};

}  // namespace poslens::hf
