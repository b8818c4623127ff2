#pragma once
// Reading little-endian scalars from untrusted byte buffers (checkpoint and tokenizer files),
// independent of the host's byte order and alignment.
#include <cstdint>
#include <cstring>

namespace poslens {

inline uint32_t read_le_u32(const unsigned char* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
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
