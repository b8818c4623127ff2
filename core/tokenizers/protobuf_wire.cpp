// Strict protobuf wire-format reader; see protobuf_wire.h and
// https://protobuf.dev/programming-guides/encoding/ for the format.
#include "core/tokenizers/protobuf_wire.h"

#include <cstring>
#include <sstream>
#include <utility>

#include "core/base/error.h"

namespace poslens::protobuf {
namespace {

/// Largest field number protobuf allows (2^29 - 1).
constexpr uint64_t kMaxFieldNumber = (uint64_t{1} << 29) - 1;

uint64_t read_le(const char* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

}  // namespace

const char* wire_type_name(WireType type) {
  switch (type) {
    case WireType::Varint: return "varint";
    case WireType::Fixed64: return "64-bit";
    case WireType::LengthDelimited: return "length-delimited";
    case WireType::Fixed32: return "32-bit";
  }
  return "unknown";
}

Reader::Reader(std::string_view data, std::string context, std::size_t base_offset)
    : data_(data), context_(std::move(context)), base_(base_offset) {}

void Reader::fail(const std::string& what, std::size_t offset) const {
  std::ostringstream s;
  s << context_ << ": " << what << " (offset " << offset << ")";
  throw Error(s.str());
}

uint64_t Reader::read_varint(const char* what) {
  const std::size_t start = pos_;
  uint64_t value = 0;
  for (int i = 0; i < 10; ++i) {
    if (pos_ >= data_.size())
      fail(std::string("truncated varint (") + what + ")", base_ + start);
    const auto byte = static_cast<unsigned char>(data_[pos_++]);
    // The 10th byte may only carry the 64th bit.
    if (i == 9 && byte > 1) fail(std::string("varint longer than 64 bits (") + what + ")", base_ + start);
    value |= uint64_t{byte & 0x7Fu} << (7 * i);
    if ((byte & 0x80u) == 0) return value;
  }
  fail(std::string("varint longer than 10 bytes (") + what + ")", base_ + start);
}

bool Reader::next(Field& field) {
  if (pos_ >= data_.size()) return false;
  field = Field{};
  field.offset = base_ + pos_;
  const uint64_t tag = read_varint("field tag");
  const uint64_t number = tag >> 3;
  const auto type = static_cast<unsigned>(tag & 7u);
  if (number == 0 || number > kMaxFieldNumber) {
    std::ostringstream s;
    s << "invalid field number " << number;
    fail(s.str(), field.offset);
  }
  field.number = static_cast<uint32_t>(number);
  switch (type) {
    case 0:
      field.type = WireType::Varint;
      field.varint = read_varint("field value");
      return true;
    case 1:
      field.type = WireType::Fixed64;
      if (data_.size() - pos_ < 8) {
        std::ostringstream s;
        s << "field " << number << ": truncated 64-bit value";
        fail(s.str(), base_ + pos_);
      }
      field.fixed64 = read_le(data_.data() + pos_, 8);
      pos_ += 8;
      return true;
    case 5:
      field.type = WireType::Fixed32;
      if (data_.size() - pos_ < 4) {
        std::ostringstream s;
        s << "field " << number << ": truncated 32-bit value";
        fail(s.str(), base_ + pos_);
      }
      field.fixed32 = static_cast<uint32_t>(read_le(data_.data() + pos_, 4));
      pos_ += 4;
      return true;
    case 2: {
      field.type = WireType::LengthDelimited;
      const std::size_t length_at = base_ + pos_;
      const uint64_t length = read_varint("length");
      if (length > data_.size() - pos_) {
        std::ostringstream s;
        s << "field " << number << ": length " << length << " runs past the end ("
          << (data_.size() - pos_) << " bytes left)";
        fail(s.str(), length_at);
      }
      field.payload_offset = base_ + pos_;
      field.bytes = data_.substr(pos_, static_cast<std::size_t>(length));
      pos_ += static_cast<std::size_t>(length);
      return true;
    }
    default: {
      std::ostringstream s;
      s << "field " << number << ": unsupported wire type " << type
        << (type == 3 || type == 4 ? " (group)" : "");
      fail(s.str(), field.offset);
    }
  }
}

void Reader::expect(const Field& field, WireType type, const char* name) const {
  if (field.type == type) return;
  std::ostringstream s;
  s << name << " (field " << field.number << "): expected wire type " << wire_type_name(type)
    << ", found " << wire_type_name(field.type);
  fail(s.str(), field.offset);
}

int32_t Reader::int32(const Field& field, const char* name) const {
  expect(field, WireType::Varint, name);
  const auto low = static_cast<uint32_t>(field.varint);
  int32_t v;
  std::memcpy(&v, &low, sizeof v);
  return v;
}

bool Reader::boolean(const Field& field, const char* name) const {
  expect(field, WireType::Varint, name);
  return field.varint != 0;
}

float Reader::float32(const Field& field, const char* name) const {
  expect(field, WireType::Fixed32, name);
  float v;
  std::memcpy(&v, &field.fixed32, sizeof v);
  return v;
}

std::string_view Reader::bytes(const Field& field, const char* name) const {
  expect(field, WireType::LengthDelimited, name);
  return field.bytes;
}

Reader Reader::message(const Field& field, const char* name) const {
  expect(field, WireType::LengthDelimited, name);
  return Reader(field.bytes, context_ + "." + name, field.payload_offset);
}

}  // namespace poslens::protobuf
