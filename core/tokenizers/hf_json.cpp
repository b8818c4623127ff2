#include "core/tokenizers/hf_json.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "core/base/error.h"
#include "core/base/text.h"
#include "core/base/untrusted_json.h"
#include "core/tokenizers/hf_text.h"

namespace poslens::hf {

nlohmann::json parse_tokenizer_json(const std::string& text, const std::string& where) {
  return parse_untrusted_json_sorted(text.data(), text.data() + text.size(), where, "the file");
}

double serde_json_f64(double value) {
  if (!std::isfinite(value) || value == 0) return value;
  char buffer[64];
  const auto written = std::to_chars(buffer, buffer + sizeof buffer, value);
  std::string_view s(buffer, static_cast<size_t>(written.ptr - buffer));
  const bool negative = s.front() == '-';
  if (negative) s.remove_prefix(1);
  const size_t e = s.find('e');
  int exponent = e == std::string_view::npos ? 0 : std::atoi(std::string(s.substr(e + 1)).c_str());
  uint64_t significand = 0;
  bool fraction = false;
  for (const char c : s.substr(0, e)) {
    if (c == '.') {
      fraction = true;
      continue;
    }
    significand = significand * 10 + static_cast<uint64_t>(c - '0');  // at most 17 digits
    if (fraction) --exponent;
  }
  // serde_json's POW10: 1e0 ... 1e308, each correctly rounded.
  static const std::array<double, 309> pow10 = [] {
    std::array<double, 309> t{};
    for (size_t k = 0; k < t.size(); ++k)
      t[k] = std::strtod(("1e" + std::to_string(k)).c_str(), nullptr);
    return t;
  }();
  double f = static_cast<double>(significand);
  for (;;) {  // serde_json de.rs f64_from_parts
    const int magnitude = exponent < 0 ? -exponent : exponent;
    if (magnitude < static_cast<int>(pow10.size())) {
      f = exponent >= 0 ? f * pow10[static_cast<size_t>(magnitude)]
                        : f / pow10[static_cast<size_t>(magnitude)];
      break;
    }
    if (f == 0 || exponent >= 0) return value;  // (serde_json: zero, or out of range)
    f /= 1e308;
    exponent += 308;
  }
  return negative ? -f : f;
}

void Field::fail(const std::string& what) const {
  throw Error(*file_ + ": " + (path_.empty() ? std::string("top level") : path_) + ": " + what);
}

bool Field::has(const char* key) const {
  if (!value_->is_object()) return false;
  const auto it = value_->find(key);
  return it != value_->end() && !it->is_null();
}

void Field::require_object() const {
  if (!value_->is_object()) fail("must be an object, got " + std::string(value_->type_name()));
}

Field Field::operator[](const char* key) const {
  require_object();
  const std::string sub = path_.empty() ? key : path_ + "." + key;
  const auto it = value_->find(key);
  if (it == value_->end()) Field(*value_, sub, file_).fail("missing");
  return Field(*it, sub, file_);
}

Field Field::optional(const char* key) const {
  static const nlohmann::json null_value;
  require_object();
  const std::string sub = path_.empty() ? key : path_ + "." + key;
  const auto it = value_->find(key);
  return Field(it == value_->end() ? null_value : *it, sub, file_);
}

size_t Field::array_size() const {
  if (!value_->is_array()) fail("must be a list, got " + std::string(value_->type_name()));
  if (value_->size() > static_cast<size_t>(kMaxVocabulary))
    fail("has " + std::to_string(value_->size()) + " entries, more than the limit of " +
         std::to_string(kMaxVocabulary));
  return value_->size();
}

Field Field::at(size_t i) const {
  return Field((*value_)[i], path_ + "[" + std::to_string(i) + "]", file_);
}

std::string Field::string() const {
  if (!value_->is_string()) fail("must be a string, got " + std::string(value_->type_name()));
  return value_->get<std::string>();
}

bool Field::boolean() const {
  if (!value_->is_boolean()) fail("must be true or false, got " + value_->dump());
  return value_->get<bool>();
}

int64_t Field::integer() const {
  if (!value_->is_number_integer()) fail("must be an integer, got " + value_->dump());
  if (value_->is_number_unsigned() && value_->get<uint64_t>() > uint64_t(INT64_MAX))
    fail("integer out of range");
  return value_->get<int64_t>();
}

double Field::number() const {
  if (!value_->is_number()) fail("must be a number, got " + value_->dump());
  return value_->get<double>();
}

char32_t Field::character() const {
  const std::string s = string();
  size_t n = 0;
  if (s.empty() || char_length(static_cast<unsigned char>(s[0])) != s.size() ||
      invalid_utf8_at(s) != std::string::npos)
    fail("must be a single character, got " + poslens::quoted(s));
  return next_char(s, 0, &n);
}

std::string Field::string_or(const char* key, const std::string& fallback) const {
  return has(key) ? (*this)[key].string() : fallback;
}

bool Field::bool_or(const char* key, bool fallback) const {
  return has(key) ? (*this)[key].boolean() : fallback;
}

int64_t Field::int_or(const char* key, int64_t fallback) const {
  return has(key) ? (*this)[key].integer() : fallback;
}

}  // namespace poslens::hf
