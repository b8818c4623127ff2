#pragma once
// Reading little-endian scalars from untrusted byte buffers (checkpoint and tokenizer files),
// independent of the host's byte order and alignment, and appending them to a byte string.
#include <cstdint>
#include <cstring>
#include <string>

namespace poslens {

inline uint32_t read_le_u32(const unsigned char* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

inline uint64_t read_le_u64(const unsigned char* p) {
  return uint64_t{read_le_u32(p)} | (uint64_t{read_le_u32(p + 4)} << 32);
}

/// Appends `v` as 8 little-endian bytes.
inline void append_le_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

inline int32_t read_le_i32(const unsigned char* p) {
  const uint32_t u = read_le_u32(p);
  int32_t v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}

inline float read_le_f32(const unsigned char* p) {
  const uint32_t u = read_le_u32(p);
  float v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}

}  // namespace poslens
