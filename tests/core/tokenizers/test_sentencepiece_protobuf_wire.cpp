// The strict protobuf wire reader (core/tokenizers/protobuf_wire.h) on hand-made bytes.
#include <gtest/gtest.h>

#include <string>

#include "core/base/error.h"
#include "core/tokenizers/protobuf_wire.h"
#include "fixtures.h"

namespace poslens::protobuf {
namespace {

using test::Contains;
using test::error_of;

/// A string of every byte of a literal (embedded NULs included).
template <std::size_t N>
std::string bytes(const char (&s)[N]) {
  return std::string(s, N - 1);
}

TEST(ProtobufWire, ReadsEveryWireType) {
  // field 1 varint 150; field 2 fixed64 1; field 3 "hi"; field 4 fixed32 1.5f; field 5 -1 (int32)
  const std::string data = bytes(
      "\x08\x96\x01"
      "\x11\x01\x00\x00\x00\x00\x00\x00\x00"
      "\x1a\x02hi"
      "\x25\x00\x00\xc0\x3f"
      "\x28\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01");
  Reader r(data, "test");
  Field f;
  ASSERT_TRUE(r.next(f));
  EXPECT_EQ(f.number, 1u);
  EXPECT_EQ(f.type, WireType::Varint);
  EXPECT_EQ(f.varint, 150u);
  EXPECT_EQ(r.int32(f, "a"), 150);
  ASSERT_TRUE(r.next(f));
  EXPECT_EQ(f.type, WireType::Fixed64);
  EXPECT_EQ(f.fixed64, 1u);
  ASSERT_TRUE(r.next(f));
  EXPECT_EQ(r.bytes(f, "c"), "hi");
  EXPECT_EQ(f.payload_offset, 14u);
  ASSERT_TRUE(r.next(f));
  EXPECT_EQ(r.float32(f, "d"), 1.5f);
  ASSERT_TRUE(r.next(f));
  EXPECT_EQ(r.int32(f, "e"), -1);
  EXPECT_TRUE(r.boolean(f, "e"));
  EXPECT_FALSE(r.next(f));
}

TEST(ProtobufWire, NestedMessagesKeepAbsoluteOffsets) {
  // field 2 = message { field 1 = "x" }, then a broken tag inside a second message.
  const std::string data = bytes("\x12\x03\x0a\x01x\x12\x01\x80");
  Reader r(data, "file: M");
  Field f;
  ASSERT_TRUE(r.next(f));
  Reader inner = r.message(f, "sub");
  EXPECT_EQ(inner.context(), "file: M.sub");
  Field g;
  ASSERT_TRUE(inner.next(g));
  EXPECT_EQ(g.offset, 2u);
  EXPECT_EQ(inner.bytes(g, "name"), "x");
  EXPECT_FALSE(inner.next(g));
  ASSERT_TRUE(r.next(f));
  Reader broken = r.message(f, "sub");
  const std::string e = error_of([&] { broken.next(g); });
  EXPECT_TRUE(Contains(e, "file: M.sub: truncated varint (field tag) (offset 7)"));
}

TEST(ProtobufWire, RejectsMalformedInput) {
  auto first_error = [](const std::string& data) {
    return error_of([&] {
      Reader r(data, "ctx");
      Field f;
      while (r.next(f)) {
      }
    });
  };
  EXPECT_TRUE(Contains(first_error(bytes("\x08")), "truncated varint (field value)"));
  EXPECT_TRUE(Contains(first_error(bytes("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02")),
                       "varint longer than 64 bits"));
  EXPECT_TRUE(Contains(first_error(bytes("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x81\x00")),
                       "varint longer than 64 bits"));
  EXPECT_TRUE(Contains(first_error(bytes("\x0a\x05hi")), "length 5 runs past the end (2 bytes left)"));
  // A "negative" length: a 10-byte varint for 2^64 - 1.
  EXPECT_TRUE(Contains(first_error(bytes("\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01")),
                       "runs past the end"));
  EXPECT_TRUE(Contains(first_error(bytes("\x00\x01")), "invalid field number 0"));
  EXPECT_TRUE(Contains(first_error(bytes("\x0b")), "unsupported wire type 3 (group)"));
  EXPECT_TRUE(Contains(first_error(bytes("\x0e")), "unsupported wire type 6"));
  EXPECT_TRUE(Contains(first_error(bytes("\x0d\x01\x02")), "truncated 32-bit value"));
  EXPECT_TRUE(Contains(first_error(bytes("\x09\x01\x02")), "truncated 64-bit value"));
  EXPECT_TRUE(Contains(first_error(bytes("\x08\x01\x0a")), "ctx: truncated varint (length) (offset 3)"));
}

TEST(ProtobufWire, WrongWireTypeNamesTheField) {
  const std::string data = bytes("\x0a\x01x");
  Reader r(data, "m.model: ModelProto.trainer_spec");
  Field f;
  ASSERT_TRUE(r.next(f));
  const std::string e = error_of([&] { r.int32(f, "model_type"); });
  EXPECT_TRUE(Contains(e, "m.model: ModelProto.trainer_spec: model_type (field 1): expected wire "
                          "type varint, found length-delimited (offset 0)"));
  EXPECT_TRUE(Contains(error_of([&] { r.float32(f, "score"); }), "expected wire type 32-bit"));
}

}  // namespace
}  // namespace poslens::protobuf
