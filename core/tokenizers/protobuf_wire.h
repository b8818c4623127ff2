#pragma once
// A small, strict reader of the protobuf binary wire format, enough to read SentencePiece's
// tokenizer.model (a ModelProto) without linking libprotobuf (Debian's libsentencepiece bundles
// a protobuf that clashes with LibTorch's in one process).
//
// Wire format: https://protobuf.dev/programming-guides/encoding/ — a message is a sequence of
// (tag varint = field_number << 3 | wire_type, payload). Wire types: 0 varint, 1 64-bit,
// 2 length-delimited, 5 32-bit; 3/4 (groups, deprecated) are rejected here.
//
// Every read is bounds-checked; every problem throws one poslens::Error that names the
// context (file and message) and the byte offset. Nesting is bounded by the caller, which only
// descends into the sub-messages it knows (see sentencepiece_model.cpp).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace poslens::protobuf {

enum class WireType : uint8_t { Varint = 0, Fixed64 = 1, LengthDelimited = 2, Fixed32 = 5 };

/// The name of a wire type for messages ("varint", "length-delimited", ...).
const char* wire_type_name(WireType type);

/// One field as read from the wire. Only the member of its wire type is meaningful.
struct Field {
  uint32_t number = 0;
  WireType type = WireType::Varint;
  uint64_t varint = 0;      // Varint
  uint64_t fixed64 = 0;     // Fixed64
  uint32_t fixed32 = 0;     // Fixed32
  std::string_view bytes;   // LengthDelimited: the payload, inside the reader's buffer
  std::size_t offset = 0;   // absolute offset of the tag in the whole buffer (for messages)
  std::size_t payload_offset = 0;  // absolute offset of the payload (LengthDelimited)
};

/// Reads the fields of one message, in order. `context` names the message in errors
/// ("llama2/tokenizer.model: ModelProto.trainer_spec"); `base_offset` is the absolute offset
/// of `data` in the file so that errors point at the right byte.
class Reader {
 public:
  Reader(std::string_view data, std::string context, std::size_t base_offset = 0);

  /// The next field, or false at the end of the message. Throws poslens::Error on a truncated
  /// or malformed field (varint longer than 10 bytes, length past the end, field number 0 or
  /// above 2^29-1, group or reserved wire types).
  bool next(Field& field);

  /// Throws poslens::Error "<context>.<name> (field N): expected wire type X, found Y at offset".
  void expect(const Field& field, WireType type, const char* name) const;

  /// Typed accessors; each checks the wire type first (see expect()).
  /// int32/enum: protobuf keeps the low 32 bits of the varint (negative values are 10 bytes).
  int32_t int32(const Field& field, const char* name) const;
  bool boolean(const Field& field, const char* name) const;
  float float32(const Field& field, const char* name) const;
  std::string_view bytes(const Field& field, const char* name) const;

  /// A reader for an embedded message field, with "<context>.<name>" as its context.
  Reader message(const Field& field, const char* name) const;

  const std::string& context() const { return context_; }

  /// Throws poslens::Error "<context>: <what> (offset N)".
  [[noreturn]] void fail(const std::string& what, std::size_t offset) const;

 private:
  uint64_t read_varint(const char* what);

  std::string_view data_;
  std::size_t pos_ = 0;
  std::string context_;
  std::size_t base_ = 0;
};

}  // namespace poslens::protobuf
