#include "core/formats/npy.h"

#include <cstring>
#include <limits>

#include "core/base/error.h"
#include "core/base/untrusted_json.h"

namespace poslens {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicBytes = 6;
constexpr uint64_t kMaxHeaderBytes = 1 << 16;

/// The text after `'key':` in numpy's header dict, up to the next top-level comma or brace.
std::string dict_value(const std::string& header, const std::string& key, const std::string& path) {
  const auto at = header.find("'" + key + "'");
  if (at == std::string::npos) throw Error(path + ": the .npy header has no '" + key + "'");
  auto begin = header.find(':', at);
  if (begin == std::string::npos) throw Error(path + ": the .npy header's '" + key + "' has no value");
  ++begin;
  while (begin < header.size() && header[begin] == ' ') ++begin;
  int depth = 0;
  size_t end = begin;
  for (; end < header.size(); ++end) {
    const char c = header[end];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
  }
  return header.substr(begin, end - begin);
}

/// The dimensions of a shape tuple "(5,)", "(1, 5)" or "()".
std::vector<uint64_t> shape_of(const std::string& text, const std::string& path) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')')
    throw Error(path + ": the .npy shape " + text + " is not a tuple");
  std::vector<uint64_t> dims;
  std::string item;
  for (size_t i = 1; i + 1 <= text.size(); ++i) {
    const char c = text[i];
    if (c == ',' || c == ')') {
      if (!item.empty()) {
        if (item.size() > 18) throw Error(path + ": the .npy shape " + text + " is too large");
        dims.push_back(std::stoull(item));
      }
      item.clear();
    } else if (c >= '0' && c <= '9') {
      item += c;
    } else if (c != ' ') {
      throw Error(path + ": the .npy shape " + text + " is not a tuple of sizes");
    }
  }
  return dims;
}

/// Bytes per element and signedness of a supported dtype ('<i8', '|u1', …).
struct IntType {
  int bytes = 0;
  bool is_signed = true;
};

IntType int_type(const std::string& descr, const std::string& path) {
  const std::string quoted = descr.size() >= 2 ? descr.substr(1, descr.size() - 2) : "";
  const auto refuse = [&] {
    return Error(path + ": token ids must be integers (int8–int64 or uint8–uint32, little-endian), "
                 "the .npy holds " + descr);
  };
  if (quoted.size() != 3) throw refuse();
  const char order = quoted[0], kind = quoted[1], size = quoted[2];
  const int bytes = size - '0';
  if ((kind != 'i' && kind != 'u') || (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8) ||
      (kind == 'u' && bytes == 8))
    throw refuse();
  if (!(order == '<' || order == '|' || (order == '=' && bytes == 1))) throw refuse();
  if (order == '|' && bytes != 1) throw refuse();
  return {bytes, kind == 'i'};
}

int64_t element(const unsigned char* p, const IntType& t) {
  uint64_t u = 0;
  for (int b = t.bytes - 1; b >= 0; --b) u = (u << 8) | p[b];
  if (!t.is_signed || t.bytes == 8) return static_cast<int64_t>(u);
  const uint64_t sign = uint64_t{1} << (8 * t.bytes - 1);
  return static_cast<int64_t>(u ^ sign) - static_cast<int64_t>(sign);  // sign-extend
}

}  // namespace

std::vector<int64_t> read_npy_integers(const std::string& path, std::uint64_t limit) {
  const std::string bytes = read_small_file(path, limit);
  if (bytes.size() < kMagicBytes + 4 || std::memcmp(bytes.data(), kMagic, kMagicBytes) != 0)
    throw Error(path + ": not a .npy file (no \\x93NUMPY magic)");
  const int major = static_cast<unsigned char>(bytes[6]);
  if (major < 1 || major > 3)
    throw Error(path + ": .npy format version " + std::to_string(major) + " is not 1, 2 or 3");
  const size_t length_bytes = major == 1 ? 2 : 4;
  const size_t header_at = 8 + length_bytes;
  if (bytes.size() < header_at) throw Error(path + ": the .npy header is cut off");
  uint64_t header_bytes = 0;
  for (size_t i = 0; i < length_bytes; ++i)
    header_bytes |= uint64_t{static_cast<unsigned char>(bytes[8 + i])} << (8 * i);
  if (header_bytes > kMaxHeaderBytes || header_at + header_bytes > bytes.size())
    throw Error(path + ": the .npy header claims " + std::to_string(header_bytes) +
                " bytes, more than the file holds");
  const std::string header = bytes.substr(header_at, header_bytes);
  if (header.empty() || header.front() != '{') throw Error(path + ": the .npy header is not a dict");
  const auto type = int_type(dict_value(header, "descr", path), path);
  if (dict_value(header, "fortran_order", path) != "False")
    throw Error(path + ": the .npy array is in Fortran order; save it with numpy.ascontiguousarray");
  const auto dims = shape_of(dict_value(header, "shape", path), path);
  if (!(dims.size() == 1 || (dims.size() == 2 && dims[0] == 1)))
    throw Error(path + ": token ids are one sequence, shape (T,) or (1, T), not the .npy's " +
                dict_value(header, "shape", path));
  const uint64_t count = dims.back();
  const uint64_t data_at = header_at + header_bytes;
  if (count > (bytes.size() - data_at) / static_cast<uint64_t>(type.bytes) ||
      count * static_cast<uint64_t>(type.bytes) != bytes.size() - data_at)
    throw Error(path + ": the .npy shape says " + std::to_string(count) + " ids of " +
                std::to_string(type.bytes) + " bytes, the file has " +
                std::to_string(bytes.size() - data_at) + " bytes of data");
  std::vector<int64_t> ids(count);
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data()) + data_at;
  for (uint64_t i = 0; i < count; ++i) ids[i] = element(data + i * type.bytes, type);
  return ids;
}

}  // namespace poslens
