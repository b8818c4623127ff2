// Tests of the torch.save zip reader (core/torch_zip.h) and its restricted unpickler: archives
// written by Debian's python3-torch at test time (values compared with what Python saved), and
// hand-made archives (LibTorch's PyTorchStreamWriter + hand-assembled pickles) for views,
// hostile pickles, out-of-bounds views and damaged files, checking each error text.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <caffe2/serialize/inline_container.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/restricted_unpickler.h"
#include "core/torch_zip.h"
#include "fixtures.h"

namespace poslens {
namespace {

namespace fs = std::filesystem;

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// The poslens::Error message `f` throws; a test failure if it throws nothing or another type.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected poslens::Error, got another exception: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected poslens::Error, nothing was thrown";
  return {};
}

::testing::AssertionResult Contains(const std::string& message, const std::string& needle) {
  if (message.find(needle) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "message \"" << message << "\" lacks \"" << needle
                                       << "\"";
}

/// Little-endian bytes of float values (the test host is little-endian, as is the format).
std::string f32_bytes(const std::vector<float>& values) {
  std::string out(values.size() * 4, '\0');
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

/// Raw bytes of a tensor's elements in row-major order.
std::string tensor_bytes(const at::Tensor& t) {
  const at::Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()),
                     static_cast<std::size_t>(c.numel()) * c.element_size());
}

/// A zip in the torch.save layout: every record under "<file stem>/", written by LibTorch's
/// own PyTorchStreamWriter (which adds the "version" record and the 64-byte alignment).
void write_archive(const fs::path& path,
                   const std::vector<std::pair<std::string, std::string>>& records) {
  caffe2::serialize::PyTorchStreamWriter writer(path.string());
  for (const auto& [name, bytes] : records) writer.writeRecord(name, bytes.data(), bytes.size());
  writer.writeEndOfFile();
}

/// Assembles pickle bytes opcode by opcode (names as in Python's pickletools).
class Pickle {
 public:
  Pickle() { bytes_ = std::string("\x80\x02", 2); }  // PROTO 2
  Pickle& op(unsigned char code) {
    bytes_ += static_cast<char>(code);
    return *this;
  }
  Pickle& global(const std::string& module, const std::string& name) {
    return op('c').raw(module + "\n" + name + "\n");
  }
  Pickle& str(const std::string& s) {  // BINUNICODE
    op('X');
    for (int i = 0; i < 4; ++i) bytes_ += static_cast<char>((s.size() >> (8 * i)) & 0xff);
    return raw(s);
  }
  Pickle& integer(int64_t v) {  // LONG1 with 8 bytes: any int64
    op(0x8a).op(8);
    for (int i = 0; i < 8; ++i) bytes_ += static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
    return *this;
  }
  Pickle& ints(const std::vector<int64_t>& values) {  // a tuple of ints
    op('(');
    for (int64_t v : values) integer(v);
    return op('t');
  }
  Pickle& raw(const std::string& s) {
    bytes_ += s;
    return *this;
  }
  /// _rebuild_tensor_v2(storage pid, offset, size, stride, False, OrderedDict()) as torch.save
  /// writes it; the persistent id is ('storage', torch.<storage>, key, 'cpu', numel).
  Pickle& tensor(const std::string& storage, const std::string& key, int64_t numel,
                 int64_t offset, const std::vector<int64_t>& size,
                 const std::vector<int64_t>& stride) {
    global("torch._utils", "_rebuild_tensor_v2").op('(');
    op('(').str("storage").global("torch", storage).str(key).str("cpu").integer(numel).op('t');
    op('Q').integer(offset).ints(size).ints(stride).op(0x89);
    global("collections", "OrderedDict").op(')').op('R');
    return op('t').op('R');
  }
  std::string done() { return bytes_ + "."; }
  std::string unfinished() const { return bytes_; }

 private:
  std::string bytes_;
};

/// A state_dict pickle {name: tensor view of FloatStorage "0" with 6 elements}.
std::string one_tensor_pickle(const std::string& name, int64_t numel, int64_t offset,
                              const std::vector<int64_t>& size,
                              const std::vector<int64_t>& stride) {
  return Pickle().op('}').str(name).tensor("FloatStorage", "0", numel, offset, size, stride)
      .op('s').done();
}

/// Writes an archive with data.pkl = `pkl` and data/0 = the floats 1..6; returns its path.
fs::path archive_with(const std::string& pkl, const std::string& file = "model.pt") {
  const fs::path path = test::scratch_dir() / file;
  write_archive(path, {{"data.pkl", pkl}, {"data/0", f32_bytes({1, 2, 3, 4, 5, 6})}});
  return path;
}

std::string open_error(const fs::path& path) {
  return error_of([&] { TorchZipFile file(path.string()); });
}

// ---------------------------------------------------------------------------------------------
// Hand-made archives: valid ones

TEST(TorchZip, HandMadeArchiveWithViewsOfOneStorage) {
  const std::string pkl =
      Pickle()
          .global("collections", "OrderedDict").op(')').op('R').op('(')
          .str("w").tensor("FloatStorage", "0", 6, 0, {2, 3}, {3, 1})
          .str("w_t").tensor("FloatStorage", "0", 6, 0, {3, 2}, {1, 3})
          .str("row1").tensor("FloatStorage", "0", 6, 3, {3}, {1})
          .str("scalar").tensor("FloatStorage", "0", 6, 5, {}, {})
          .op('u').done();
  const fs::path path = archive_with(pkl);
  TorchZipFile file(path.string());
  EXPECT_EQ(file.describe(), path.string());
  ASSERT_EQ(file.tensors().size(), 4u);
  const std::vector<std::string> names = {"w", "w_t", "row1", "scalar"};
  for (std::size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(file.tensors()[i].name, names[i]);
    EXPECT_EQ(file.tensors()[i].dtype, StoredDType::F32);
  }
  EXPECT_EQ(file.tensors()[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(file.tensors()[3].shape, std::vector<int64_t>{});

  const at::Tensor expected = torch::arange(1, 7, torch::kFloat).reshape({2, 3});
  const at::Tensor w = file.load("w");
  EXPECT_EQ(w.scalar_type(), at::kFloat);
  EXPECT_TRUE(w.device().is_cpu());
  EXPECT_TRUE(torch::equal(w, expected));
  const at::Tensor w_t = file.load("w_t");
  EXPECT_EQ(w_t.strides().vec(), (std::vector<int64_t>{1, 3}));
  EXPECT_TRUE(torch::equal(w_t, expected.t()));
  EXPECT_TRUE(torch::equal(file.load("row1"), torch::tensor({4.f, 5.f, 6.f})));
  EXPECT_EQ(file.load("scalar").dim(), 0);
  EXPECT_EQ(file.load("scalar").item<float>(), 6.f);
}

TEST(TorchZip, TensorOutlivesTheFileAndTiedViewsShareMemory) {
  const std::string pkl = Pickle()
                              .op('}').op('(')
                              .str("a").tensor("FloatStorage", "0", 6, 0, {6}, {1})
                              .str("b").tensor("FloatStorage", "0", 6, 2, {2}, {2})
                              .op('u').done();
  const fs::path path = archive_with(pkl);
  at::Tensor a, b;
  {
    TorchZipFile file(path.string());
    a = file.load("a");
    b = file.load("b");
  }
  EXPECT_TRUE(torch::equal(a, torch::arange(1, 7, torch::kFloat)));
  EXPECT_TRUE(torch::equal(b, torch::tensor({3.f, 5.f})));
  // b views elements 2 and 4 of a's storage, as torch.load would share it.
  EXPECT_EQ(static_cast<char*>(b.data_ptr()), static_cast<char*>(a.data_ptr()) + 2 * 4);
}

TEST(TorchZip, LittleEndianByteorderRecordIsAccepted) {
  const fs::path path = test::scratch_dir() / "model.pt";
  write_archive(path, {{"data.pkl", one_tensor_pickle("w", 6, 0, {6}, {1})},
                       {"byteorder", "little"},
                       {"data/0", f32_bytes({1, 2, 3, 4, 5, 6})}});
  TorchZipFile file(path.string());
  EXPECT_TRUE(torch::equal(file.load("w"), torch::arange(1, 7, torch::kFloat)));
}

TEST(TorchZip, EveryStorageTypeMapsToItsDtype) {
  const std::vector<std::pair<std::string, StoredDType>> types = {
      {"FloatStorage", StoredDType::F32}, {"HalfStorage", StoredDType::F16},
      {"BFloat16Storage", StoredDType::BF16}, {"DoubleStorage", StoredDType::F64},
      {"LongStorage", StoredDType::I64}, {"IntStorage", StoredDType::I32},
      {"ShortStorage", StoredDType::I16}, {"CharStorage", StoredDType::I8},
      {"ByteStorage", StoredDType::U8}, {"BoolStorage", StoredDType::Bool}};
  Pickle p;
  p.op('}').op('(');
  std::vector<std::pair<std::string, std::string>> records;
  for (std::size_t i = 0; i < types.size(); ++i) {
    const std::size_t esize = element_size(types[i].second);
    p.str(types[i].first).tensor(types[i].first, std::to_string(i), 2, 0, {2}, {1});
    std::string bytes(2 * esize, '\0');
    bytes[0] = 1;  // element 0: the smallest positive pattern; element 1: zero
    records.emplace_back("data/" + std::to_string(i), bytes);
  }
  records.emplace_back("data.pkl", p.op('u').done());
  const fs::path path = test::scratch_dir() / "dtypes.pt";
  write_archive(path, records);
  TorchZipFile file(path.string());
  ASSERT_EQ(file.tensors().size(), types.size());
  for (std::size_t i = 0; i < types.size(); ++i) {
    SCOPED_TRACE(types[i].first);
    EXPECT_EQ(file.tensors()[i].dtype, types[i].second);
    const at::Tensor t = file.load(types[i].first);
    EXPECT_EQ(t.element_size(), static_cast<int64_t>(element_size(types[i].second)));
    EXPECT_EQ(tensor_bytes(t), records[i].second);
  }
  EXPECT_EQ(file.load("BoolStorage").scalar_type(), at::kBool);
  EXPECT_EQ(file.load("ByteStorage")[0].item<uint8_t>(), 1);
  EXPECT_EQ(file.load("LongStorage")[0].item<int64_t>(), 1);
}

// ---------------------------------------------------------------------------------------------
// Hand-made archives: hostile pickles

TEST(TorchZip, RefusesOsSystemWithoutRunningIt) {
  const fs::path dir = test::scratch_dir();
  const fs::path marker = dir / "pwned";
  const std::string pkl = Pickle()
                              .global("os", "system").op('(').str("touch " + marker.string())
                              .op('t').op('R').done();
  const fs::path path = dir / "model.pt";
  write_archive(path, {{"data.pkl", pkl}});
  const std::string msg = open_error(path);
  EXPECT_TRUE(Contains(msg, path.string() + ": refusing to load global \"os.system\" (only a "
                                            "plain state_dict of tensors can be read)"));
  EXPECT_FALSE(fs::exists(marker));
}

TEST(TorchZip, RefusesStackGlobalOfBuiltinsEval) {
  // Protocol 4 spelling: module and name as strings, then STACK_GLOBAL.
  const std::string pkl =
      Pickle().str("builtins").str("eval").op(0x93).op('(').str("1+1").op('t').op('R').done();
  EXPECT_TRUE(Contains(open_error(archive_with(pkl)), "refusing to load global \"builtins.eval\""));
}

TEST(TorchZip, RefusesUnsupportedStorageType) {
  const std::string pkl = Pickle().op('}').str("z")
                              .tensor("ComplexFloatStorage", "0", 3, 0, {3}, {1}).op('s').done();
  EXPECT_TRUE(Contains(open_error(archive_with(pkl)),
                       "storage type torch.ComplexFloatStorage is not supported"));
}

TEST(TorchZip, NamesUnsupportedAndUnknownOpcodesWithOffset) {
  // STRING (protocol 0 text string) is valid pickle but not something torch.save writes.
  const std::string with_string = Pickle().raw("S'x'\n").done();
  EXPECT_TRUE(Contains(open_error(archive_with(with_string)),
                       ": unsupported pickle opcode 0x53 (STRING) at offset 2"));
  const std::string with_unknown = Pickle().op('}').op(0xff).done();
  EXPECT_TRUE(Contains(open_error(archive_with(with_unknown)),
                       ": unknown pickle opcode 0xff at offset 3"));
}

TEST(TorchZip, RejectsMalformedPickles) {
  // Ends without STOP.
  EXPECT_TRUE(Contains(open_error(archive_with(Pickle().op('}').unfinished())),
                       "pickle ends at offset 3 without STOP"));
  // A string longer than the data.
  EXPECT_TRUE(Contains(open_error(archive_with(Pickle().raw("X\xff\xff\xff\x7f" "abc").done())),
                       "string of 2147483647 bytes but only 4 remain"));
  // SETITEM with nothing on the stack.
  EXPECT_TRUE(Contains(open_error(archive_with(Pickle().op('s').done())),
                       "pickle offset 2 (SETITEM): stack underflow"));
  // A memo entry that was never stored.
  EXPECT_TRUE(Contains(open_error(archive_with(Pickle().op('h').op(7).done())),
                       "memo entry 7 was never stored"));
  // LONG1 wider than 64 bits.
  EXPECT_TRUE(Contains(open_error(archive_with(Pickle().op(0x8a).op(9).raw(std::string(9, '\1')).done())),
                       "integer of 9 bytes does not fit in 64 bits"));
  // Two values left at STOP.
  EXPECT_TRUE(Contains(open_error(archive_with(Pickle().op('}').op('}').done())),
                       "STOP leaves 2 values"));
  // A tuple as a dict key.
  EXPECT_TRUE(Contains(open_error(archive_with(Pickle().op('}').op(')').op('N').op('s').done())),
                       "dict key of type tuple is not supported"));
  // A persistent id that is not a storage.
  EXPECT_TRUE(Contains(open_error(archive_with(Pickle().str("x").op('Q').done())),
                       "persistent id is not ('storage', storage type, key, location, numel)"));
  // OrderedDict called with arguments.
  EXPECT_TRUE(Contains(open_error(archive_with(
                           Pickle().global("collections", "OrderedDict").op('N').op(0x85).op('R')
                               .done())),
                       "collections.OrderedDict called with arguments"));
  // The top level is not a dict.
  EXPECT_TRUE(Contains(open_error(archive_with(Pickle().op(']').done())),
                       "data.pkl holds a list, expected a dict of tensors (a state_dict)"));
}

TEST(TorchZip, UnpicklerBoundsTheValuesItBuilds) {
  const std::string ten_tuples = Pickle().raw(std::string(10, ')')).done();
  const auto* data = reinterpret_cast<const unsigned char*>(ten_tuples.data());
  EXPECT_TRUE(Contains(error_of([&] { pickle::unpickle_restricted(data, ten_tuples.size(), "x.pt", 9); }),
                       "x.pt: pickle offset 11 (EMPTY_TUPLE): the pickle builds more than 9 values"));
  // Within the bound the same bytes parse (and fail only at STOP, which sees 10 values).
  EXPECT_TRUE(Contains(error_of([&] { pickle::unpickle_restricted(data, ten_tuples.size(), "x.pt", 10); }),
                       "STOP leaves 10 values"));
  const std::string one = Pickle().op(')').done();
  const pickle::Unpickled parsed = pickle::unpickle_restricted(
      reinterpret_cast<const unsigned char*>(one.data()), one.size(), "x.pt", 1);
  EXPECT_EQ(parsed.root->kind, pickle::Value::Kind::Tuple);
  EXPECT_EQ(parsed.values.size(), 1u);
}

TEST(TorchZip, RejectsSelfContainingAndExplodingContainers) {
  // d = {}; d["self"] = d
  const std::string cyclic = Pickle().op('}').op('q').op(0).str("self").op('h').op(0).op('s').done();
  EXPECT_TRUE(Contains(open_error(archive_with(cyclic)), "deeper than 32 levels"));

  // d_i = {"a": d_{i-1}, "b": d_{i-1}} for 25 levels: 2^25 paths from a few hundred bytes.
  Pickle p;
  p.op('}').str("junk").op(']');
  p.op('}').op('r').raw(std::string(4, '\0')).op('a');  // d_0, memo 0
  for (int i = 1; i <= 25; ++i) {
    auto le32 = [](int v) { return std::string{static_cast<char>(v), 0, 0, 0}; };
    p.op('}').str("a").op('j').raw(le32(i - 1)).op('s').str("b").op('j').raw(le32(i - 1)).op('s');
    p.op('r').raw(le32(i)).op('a');
  }
  p.op('s');
  EXPECT_TRUE(Contains(open_error(archive_with(p.done())), "expand to more than 10000000 entries"));
}

// ---------------------------------------------------------------------------------------------
// Hand-made archives: views outside their storage, bad records

TEST(TorchZip, RejectsViewsOutsideTheStorage) {
  // 7 elements of a 6-element storage.
  EXPECT_TRUE(Contains(open_error(archive_with(one_tensor_pickle("w", 6, 0, {7}, {1}))),
                       "tensor \"w\": size [7], stride [1] and offset 0 reach element 6 of a "
                       "storage of 6 elements"));
  // The offset pushes the last element out.
  EXPECT_TRUE(Contains(open_error(archive_with(one_tensor_pickle("w", 6, 4, {3}, {1}))),
                       "reach element 6 of a storage of 6 elements"));
  // A stride that jumps far past the end.
  EXPECT_TRUE(Contains(open_error(archive_with(one_tensor_pickle("w", 6, 0, {2, 2}, {1, 1LL << 40}))),
                       "reach element 1099511627777 of a storage of 6 elements"));
  // (size - 1) x stride overflows int64.
  EXPECT_TRUE(Contains(open_error(archive_with(one_tensor_pickle("w", 6, 0, {3}, {1LL << 62}))),
                       "overflow 64 bits"));
  // numel overflows int64.
  EXPECT_TRUE(Contains(open_error(archive_with(one_tensor_pickle("w", 6, 0, {1LL << 32, 1LL << 32}, {0, 0}))),
                       "overflow 64 bits"));
  EXPECT_TRUE(Contains(open_error(archive_with(one_tensor_pickle("w", 6, -1, {2}, {1}))),
                       "negative storage offset -1"));
  EXPECT_TRUE(Contains(open_error(archive_with(one_tensor_pickle("w", 6, 0, {2}, {-1}))),
                       "has a negative entry"));
  EXPECT_TRUE(Contains(open_error(archive_with(one_tensor_pickle("w", 6, 0, {2, 3}, {1}))),
                       "size [2, 3] and stride [1] differ in length"));
  // An empty view may sit anywhere.
  TorchZipFile empty(archive_with(one_tensor_pickle("w", 6, 100, {0, 5}, {5, 1})).string());
  EXPECT_EQ(empty.load("w").sizes().vec(), (std::vector<int64_t>{0, 5}));
}

TEST(TorchZip, RejectsStorageRecordOfTheWrongSize) {
  // The pickle claims 100 floats; the record holds 6. Only reading the record can tell.
  TorchZipFile file(archive_with(one_tensor_pickle("w", 100, 0, {100}, {1})).string());
  EXPECT_TRUE(Contains(error_of([&] { file.load("w"); }),
                       "tensor \"w\": cannot read storage record data/0: the record is 24 bytes, "
                       "the pickle says 400"));
}

TEST(TorchZip, RejectsInconsistentSharedStorage) {
  const std::string pkl = Pickle().op('}').op('(')
                              .str("a").tensor("FloatStorage", "0", 6, 0, {6}, {1})
                              .str("b").tensor("FloatStorage", "0", 5, 0, {5}, {1})
                              .op('u').done();
  EXPECT_TRUE(Contains(open_error(archive_with(pkl)),
                       "tensor \"b\": storage \"0\" is 20 bytes here but 24 bytes for another "
                       "tensor"));
}

TEST(TorchZip, RejectsMissingStorageRecordAndMissingDataPkl) {
  const std::string pkl = Pickle().op('}').str("w")
                              .tensor("FloatStorage", "9", 6, 0, {6}, {1}).op('s').done();
  EXPECT_TRUE(Contains(open_error(archive_with(pkl)),
                       "tensor \"w\": its storage record data/9 is missing from the archive"));

  const fs::path path = test::scratch_dir() / "no_pickle.pt";
  write_archive(path, {{"data/0", f32_bytes({1})}});
  EXPECT_TRUE(Contains(open_error(path), "has no <archive>/data.pkl record"));
}

TEST(TorchZip, RefusesBigEndianFiles) {
  const fs::path path = test::scratch_dir() / "model.pt";
  write_archive(path, {{"data.pkl", one_tensor_pickle("w", 6, 0, {6}, {1})},
                       {"byteorder", "big"},
                       {"data/0", f32_bytes({1, 2, 3, 4, 5, 6})}});
  EXPECT_TRUE(Contains(open_error(path), "tensors are stored big-endian"));
}

TEST(TorchZip, UnknownNameIsAnError) {
  TorchZipFile file(archive_with(one_tensor_pickle("w", 6, 0, {6}, {1})).string());
  EXPECT_TRUE(Contains(error_of([&] { file.load("v"); }), ": no tensor named \"v\""));
}

// ---------------------------------------------------------------------------------------------
// Damaged and foreign files

TEST(TorchZip, RejectsNonZipEmptyMissingAndDirectory) {
  const fs::path dir = test::scratch_dir();
  write_file(dir / "text.pt", "this is not a zip archive\n");
  EXPECT_TRUE(Contains(open_error(dir / "text.pt"), "text.pt: not a zip archive"));
  write_file(dir / "empty.pt", "");
  EXPECT_TRUE(Contains(open_error(dir / "empty.pt"), "the file is only 0 bytes long"));
  EXPECT_TRUE(Contains(open_error(dir / "absent.pt"), "absent.pt: no such file"));
  EXPECT_TRUE(Contains(open_error(dir), ": not a regular file"));
  // Zip magic followed by garbage.
  write_file(dir / "fake.pt", std::string("PK\x03\x04", 4) + std::string(200, 'x'));
  EXPECT_TRUE(Contains(open_error(dir / "fake.pt"), "fake.pt: cannot read the zip archive"));
}

TEST(TorchZip, TruncationsAreErrors) {
  // Every cut in the last 160 bytes (the zip's central directory and end records), every 7th
  // byte before them (all of which lose the end records the same way).
  const fs::path good = archive_with(one_tensor_pickle("w", 6, 0, {6}, {1}));
  const std::string bytes = read_file(good);
  ASSERT_GT(bytes.size(), 200u);
  const fs::path cut = good.parent_path() / "cut.pt";
  for (std::size_t n = 0; n < bytes.size(); n += n + 160 < bytes.size() ? 7 : 1) {
    write_file(cut, bytes.substr(0, n));
    const std::string msg = open_error(cut);
    ASSERT_TRUE(Contains(msg, cut.string() + ": ")) << "cut at " << n;
  }
}

TEST(TorchZip, EveryFlippedByteIsAnErrorOrReadsCleanly) {
  // Never a crash or a foreign exception: each damaged copy either opens and loads, or throws
  // poslens::Error. LibTorch's reader skips the CRC-32 check (as torch.load does), so a flip in
  // the tensor bytes, a name or the alignment padding reads cleanly; one in the zip structure
  // or the pickle's opcodes is an error.
  const fs::path good = archive_with(one_tensor_pickle("w", 6, 0, {6}, {1}));
  const std::string bytes = read_file(good);
  const fs::path bad = good.parent_path() / "flipped.pt";
  int errors = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    std::string copy = bytes;
    copy[i] = static_cast<char>(copy[i] ^ 0xff);
    write_file(bad, copy);
    try {
      TorchZipFile file(bad.string());
      for (const TensorInfo& info : file.tensors()) file.load(info.name);
    } catch (const Error&) {
      ++errors;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "byte " << i << ": not a poslens::Error: " << e.what();
    }
  }
  EXPECT_GT(errors, static_cast<int>(bytes.size()) / 3);
}

// ---------------------------------------------------------------------------------------------
// Archives written by Python's torch.save (python3-torch), created once for the suite

/// Writes every archive the tests below read into argv[1] (argv[2]: the file evil.pt's payload
/// would touch), plus for each tensor its raw bytes (<file>.<name>
/// .raw) and a manifest line "file name dtype d0,d1,..." in manifest.txt, in save order.
const char* const kPythonScript = R"PY(
import collections, os, sys, zipfile
import torch

out = sys.argv[1]
manifest = open(os.path.join(out, "manifest.txt"), "w")

def save(obj, file, **kwargs):
    torch.save(obj, os.path.join(out, file), **kwargs)

def dump(file, tensors):
    for name, t in tensors.items():
        shape = ",".join(str(d) for d in t.shape)
        manifest.write(f"{file} {name} {t.dtype} {shape}\n")
        raw = t.contiguous().flatten().view(torch.uint8).numpy().tobytes()
        open(os.path.join(out, f"{file}.{name}.raw"), "wb").write(raw)

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(5, 4)
        self.lin = torch.nn.Linear(4, 3)
        self.norm = torch.nn.LayerNorm(3)
        self.register_buffer("position_ids", torch.arange(7).unsqueeze(0))

torch.manual_seed(0)
net = Net()
net.emb.to(torch.bfloat16)
net.lin.to(torch.float16)
sd = net.state_dict()
assert isinstance(sd, collections.OrderedDict) and hasattr(sd, "_metadata")
save(sd, "module.pt")
dump("module.pt", sd)

base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
views = {"t": base[1:, 2:].t(), "row": base[2]}
assert views["t"].storage_offset() == 8 and views["t"].stride() == (1, 6)
save(views, "views.pt")

w = torch.randn(3, 4)
save({"a": w, "b": w, "c": w[1], "d": w.t()}, "tied.pt")
dump("tied.pt", {"a": w})

params = {"p": torch.nn.Parameter(torch.arange(6.0).reshape(2, 3)),
          "frozen": torch.nn.Parameter(torch.full((2,), -1.5, dtype=torch.float64),
                                       requires_grad=False)}
save(params, "params.pt")
assert b"_rebuild_parameter" in zipfile.ZipFile(os.path.join(out, "params.pt")).read("params/data.pkl")

small = torch.nn.Linear(2, 2)
with torch.no_grad():
    small.weight.copy_(torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
    small.bias.copy_(torch.tensor([-1.0, 0.5]))
save({"model": small.state_dict(), "step": 5, "lr": 0.1, "name": "run", "done": True,
      "nothing": None, "history": [torch.tensor([7.0, 8.0]), 3],
      "opt": {"state": {0: {"exp_avg": torch.ones(2)}}, "param_groups": [{"lr": 0.1, "params": [0]}]}},
     "nested.pt")

save(views, "protocol4.pt", pickle_protocol=4)
assert b"\x93" in zipfile.ZipFile(os.path.join(out, "protocol4.pt")).read("protocol4/data.pkl")

class Evil:
    def __reduce__(self):
        return (os.system, ("touch " + sys.argv[2],))

save({"w": torch.ones(1), "evil": Evil()}, "evil.pt")
save({"w": torch.ones(2), "fn": print}, "function.pt")
save(sd, "legacy.pt", _use_new_zipfile_serialization=False)
save(torch.ones(3), "bare_tensor.pt")
torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), os.path.join(out, "scripted.pt"))
manifest.close()
)PY";

class TorchZipPython : public ::testing::Test {
 protected:
  /// Runs the script once per script text: ctest runs every test in its own process, so the
  /// archives are made in a private folder and renamed into a shared one that later processes
  /// reuse (the loser of a race just drops its copy).
  static void SetUpTestSuite() {
    const fs::path root = fs::temp_directory_path() / "poslens-tests";
    std::ostringstream key;
    key << std::hex << std::hash<std::string>{}(kPythonScript);
    dir_ = root / ("TorchZipPython-" + key.str());
    marker_ = root / "TorchZipPython-pwned";
    if (fs::exists(dir_ / "complete")) {
      script_ok_ = true;
      return;
    }
    if (std::system("/usr/bin/python3 -c 'import torch' > /dev/null 2>&1") != 0) {
      skip_ = "/usr/bin/python3 cannot import torch (install python3-torch to run these tests)";
      return;
    }
    const fs::path tmp = root / ("TorchZipPython-tmp-" + std::to_string(::getpid()));
    fs::remove_all(tmp);
    fs::create_directories(tmp);
    write_file(tmp / "make.py", kPythonScript);
    const std::string cmd = "/usr/bin/python3 '" + (tmp / "make.py").string() + "' '" +
                            tmp.string() + "' '" + marker_.string() + "' > '" +
                            (tmp / "make.log").string() + "' 2>&1";
    if (std::system(cmd.c_str()) != 0) {
      log_ = read_file(tmp / "make.log");
      fs::remove_all(tmp);
      return;
    }
    write_file(tmp / "complete", "");
    std::error_code ec;
    fs::rename(tmp, dir_, ec);  // fails when another process got there first
    if (ec) fs::remove_all(tmp);
    script_ok_ = fs::exists(dir_ / "complete");
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ASSERT_TRUE(script_ok_) << "the Python script failed:\n" << log_;
  }
  static std::string path(const std::string& file) { return (dir_ / file).string(); }

  static fs::path dir_;
  static fs::path marker_;  // the file evil.pt's payload would create
  static std::string skip_;
  static std::string log_;
  static bool script_ok_;
};

fs::path TorchZipPython::dir_;
fs::path TorchZipPython::marker_;
std::string TorchZipPython::skip_;
std::string TorchZipPython::log_;
bool TorchZipPython::script_ok_ = false;

struct ManifestEntry {
  std::string name;
  std::string dtype;  // safetensors spelling
  std::vector<int64_t> shape;
};

/// The manifest lines for `file`, in the order Python saved them.
std::vector<ManifestEntry> manifest(const fs::path& dir, const std::string& file) {
  static const std::map<std::string, std::string> kDType = {
      {"torch.float32", "F32"}, {"torch.float16", "F16"}, {"torch.bfloat16", "BF16"},
      {"torch.float64", "F64"}, {"torch.int64", "I64"},   {"torch.int32", "I32"},
      {"torch.int16", "I16"},   {"torch.int8", "I8"},     {"torch.uint8", "U8"},
      {"torch.bool", "BOOL"}};
  std::vector<ManifestEntry> out;
  std::istringstream lines(read_file(dir / "manifest.txt"));
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string f, name, dtype, shape;
    fields >> f >> name >> dtype >> shape;
    if (f != file) continue;
    ManifestEntry e{name, kDType.at(dtype), {}};
    std::istringstream dims(shape);
    for (std::string d; std::getline(dims, d, ',');) e.shape.push_back(std::stoll(d));
    out.push_back(e);
  }
  return out;
}

TEST_F(TorchZipPython, ModuleStateDictMatchesWhatPythonSaved) {
  TorchZipFile file(path("module.pt"));
  const std::vector<ManifestEntry> expected = manifest(dir_, "module.pt");
  ASSERT_EQ(expected.size(), 6u);  // emb.weight, lin.weight, lin.bias, norm.weight/bias, ids
  ASSERT_EQ(file.tensors().size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(expected[i].name);
    const TensorInfo& info = file.tensors()[i];
    EXPECT_EQ(info.name, expected[i].name);
    EXPECT_EQ(to_string(info.dtype), expected[i].dtype);
    EXPECT_EQ(info.shape, expected[i].shape);
    const at::Tensor t = file.load(info.name);
    EXPECT_EQ(t.sizes().vec(), expected[i].shape);
    EXPECT_EQ(tensor_bytes(t), read_file(dir_ / ("module.pt." + info.name + ".raw")));
  }
  // Values known without Python's dump: dtypes as converted, LayerNorm's init, the buffer.
  EXPECT_EQ(file.load("emb.weight").scalar_type(), at::kBFloat16);
  EXPECT_EQ(file.load("lin.weight").scalar_type(), at::kHalf);
  EXPECT_TRUE(torch::equal(file.load("norm.weight"), torch::ones({3})));
  EXPECT_TRUE(torch::equal(file.load("norm.bias"), torch::zeros({3})));
  EXPECT_TRUE(torch::equal(file.load("position_ids"), torch::arange(7, torch::kLong).unsqueeze(0)));
}

TEST_F(TorchZipPython, TransposedViewKeepsOffsetAndStrides) {
  for (const char* name : {"views.pt", "protocol4.pt"}) {
    SCOPED_TRACE(name);
    TorchZipFile file(path(name));
    ASSERT_EQ(file.tensors().size(), 2u);
    const at::Tensor base = torch::arange(24, torch::kFloat).reshape({4, 6});
    const at::Tensor t = file.load("t");
    EXPECT_EQ(t.sizes().vec(), (std::vector<int64_t>{4, 3}));
    EXPECT_EQ(t.strides().vec(), (std::vector<int64_t>{1, 6}));
    EXPECT_TRUE(torch::equal(t, base.slice(0, 1).slice(1, 2).t()));
    EXPECT_EQ(t[0][0].item<float>(), 8.f);  // storage offset 8
    EXPECT_TRUE(torch::equal(file.load("row"), torch::arange(12, 18, torch::kFloat)));
  }
}

TEST_F(TorchZipPython, TiedTensorsShareOneStorage) {
  TorchZipFile file(path("tied.pt"));
  ASSERT_EQ(file.tensors().size(), 4u);
  const at::Tensor a = file.load("a");
  ASSERT_EQ(tensor_bytes(a), read_file(dir_ / "tied.pt.a.raw"));
  const at::Tensor b = file.load("b");
  const at::Tensor c = file.load("c");
  const at::Tensor d = file.load("d");
  EXPECT_TRUE(torch::equal(b, a));
  EXPECT_TRUE(torch::equal(c, a[1]));
  EXPECT_TRUE(torch::equal(d, a.t()));
  EXPECT_EQ(b.data_ptr(), a.data_ptr());
  EXPECT_EQ(static_cast<char*>(c.data_ptr()), static_cast<char*>(a.data_ptr()) + 4 * 4);
}

TEST_F(TorchZipPython, ParametersReadAsTheirData) {
  TorchZipFile file(path("params.pt"));
  ASSERT_EQ(file.tensors().size(), 2u);
  EXPECT_EQ(file.tensors()[0].name, "p");
  EXPECT_EQ(file.tensors()[1].name, "frozen");
  EXPECT_TRUE(torch::equal(file.load("p"), torch::arange(6, torch::kFloat).reshape({2, 3})));
  const at::Tensor frozen = file.load("frozen");
  EXPECT_EQ(frozen.scalar_type(), at::kDouble);
  EXPECT_TRUE(torch::equal(frozen, torch::full({2}, -1.5, torch::kDouble)));
}

TEST_F(TorchZipPython, NestedCheckpointIsFlattenedWithDottedNames) {
  TorchZipFile file(path("nested.pt"));
  std::vector<std::string> names;
  for (const TensorInfo& info : file.tensors()) names.push_back(info.name);
  EXPECT_EQ(names, (std::vector<std::string>{"model.weight", "model.bias", "history.0",
                                             "opt.state.0.exp_avg"}));
  EXPECT_TRUE(torch::equal(file.load("model.weight"), torch::tensor({{1.f, 2.f}, {3.f, 4.f}})));
  EXPECT_TRUE(torch::equal(file.load("model.bias"), torch::tensor({-1.f, 0.5f})));
  EXPECT_TRUE(torch::equal(file.load("history.0"), torch::tensor({7.f, 8.f})));
  EXPECT_TRUE(torch::equal(file.load("opt.state.0.exp_avg"), torch::ones({2})));
}

TEST_F(TorchZipPython, RefusesPickledCodeWithoutRunningIt) {
  fs::remove(marker_);
  const std::string evil = error_of([&] { TorchZipFile file(path("evil.pt")); });
  EXPECT_TRUE(Contains(evil, path("evil.pt") + ": refusing to load global \"posix.system\""));
  EXPECT_FALSE(fs::exists(marker_));
  // Protocol 2 spells the builtins module "__builtin__" (Python 2's name).
  EXPECT_TRUE(Contains(error_of([&] { TorchZipFile file(path("function.pt")); }),
                       "refusing to load global \"__builtin__.print\""));
}

TEST_F(TorchZipPython, NamesLegacyTorchScriptAndBareTensorFiles) {
  EXPECT_TRUE(Contains(error_of([&] { TorchZipFile file(path("legacy.pt")); }),
                       "legacy.pt: a legacy torch.save file"));
  EXPECT_TRUE(Contains(error_of([&] { TorchZipFile file(path("scripted.pt")); }),
                       "scripted.pt: a TorchScript archive (torch.jit.save)"));
  EXPECT_TRUE(Contains(error_of([&] { TorchZipFile file(path("bare_tensor.pt")); }),
                       "bare_tensor.pt: data.pkl holds a tensor, expected a dict of tensors"));
}

TEST_F(TorchZipPython, TruncatedRealFileIsAnError) {
  const std::string bytes = read_file(path("module.pt"));
  const fs::path cut = test::scratch_dir() / "module_cut.pt";
  for (std::size_t n : {bytes.size() - 1, bytes.size() - 22, bytes.size() / 2, std::size_t{64}}) {
    write_file(cut, bytes.substr(0, n));
    EXPECT_TRUE(Contains(error_of([&] { TorchZipFile file(cut.string()); }),
                         cut.string() + ": cannot read the zip archive"))
        << "cut at " << n;
  }
}

}  // namespace
}  // namespace poslens
