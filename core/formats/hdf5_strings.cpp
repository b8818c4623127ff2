#include "core/formats/hdf5_strings.h"

#include <cstdint>

#include "core/base/error.h"
#include "core/base/little_endian.h"

namespace poslens {
namespace {

void put_text(std::string& out, const std::string& text) {
  append_le_u64(out, text.size());
  out += text;
}

/// Reads `bytes` front to back; every length is checked against what is left.
class Cursor {
 public:
  Cursor(const std::string& bytes, const std::string& source) : bytes_(bytes), source_(source) {}
  bool done() const { return at_ == bytes_.size(); }
  uint64_t length() {
    need(8);
    const uint64_t n = read_le_u64(reinterpret_cast<const unsigned char*>(bytes_.data()) + at_);
    at_ += 8;
    return n;
  }
  std::string text() {
    const uint64_t n = length();
    need(n);
    std::string out = bytes_.substr(at_, n);
    at_ += n;
    return out;
  }
  /// A count of items that each take at least 8 more bytes: bounded by what is left.
  uint64_t count() {
    const uint64_t n = length();
    if (n > (bytes_.size() - at_) / 8) fail();
    return n;
  }

 private:
  void need(uint64_t n) const {
    if (n > bytes_.size() - at_) fail();
  }
  [[noreturn]] void fail() const {
    throw Error(source_ + ": the strings read in the child process arrived damaged (at byte " + std::to_string(at_) +
                " of " + std::to_string(bytes_.size()) + ")");
  }
  const std::string& bytes_;
  const std::string& source_;
  size_t at_ = 0;
};

}  // namespace

std::string Hdf5Strings::serialise() const {
  std::string out;
  for (const auto& [key, strings] : values) {
    put_text(out, key);
    append_le_u64(out, strings.size());
    for (const auto& s : strings) put_text(out, s);
  }
  return out;
}

Hdf5Strings Hdf5Strings::parse(const std::string& bytes, const std::string& source) {
  Hdf5Strings out;
  Cursor in(bytes, source);
  while (!in.done()) {
    auto key = in.text();
    std::vector<std::string> strings(in.count());
    for (auto& s : strings) s = in.text();
    out.values[std::move(key)] = std::move(strings);
  }
  return out;
}

}  // namespace poslens
