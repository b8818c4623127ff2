// Tests of the torch.save zip reader (core/torch_zip.h) and its restricted unpickler: archives
// written by Debian's python3-torch at test time (values compared with what Python saved), and
// hand-made archives (LibTorch's PyTorchStreamWriter + hand-assembled pickles) for views,
// hostile pickles, out-of-bounds views and damaged files, checking each error text.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <c10/core/CPUAllocator.h>
#include <caffe2/serialize/inline_container.h>

#include "core/base/error.h"
#include "core/formats/restricted_unpickler.h"
#include "core/formats/torch_zip.h"
#include "fixtures.h"
#include "torch_zip_archives.h"

namespace poslens {
namespace {

using namespace torch_zip_test;

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

// A storage's only tensor, whole and contiguous, owns its record's bytes — LibTorch's own CPU
// allocation, which the loader keeps without a copy (weight_table.cpp is_private_block); a
// storage viewed by several tensors, or viewed in part or transposed, stays shared.
TEST(TorchZip, ASoleWholeTensorOwnsItsRecordOthersShareIt) {
  const std::string pkl = Pickle()
                              .op('}').op('(')
                              .str("alone").tensor("FloatStorage", "0", 6, 0, {2, 3}, {3, 1})
                              .str("tied_a").tensor("FloatStorage", "1", 4, 0, {4}, {1})
                              .str("tied_b").tensor("FloatStorage", "1", 4, 0, {4}, {1})
                              .str("part").tensor("FloatStorage", "2", 6, 1, {5}, {1})
                              .str("transposed").tensor("FloatStorage", "3", 6, 0, {3, 2}, {1, 3})
                              .op('u').done();
  const fs::path path = test::scratch_dir() / "model.pt";
  const auto floats = [](int n) { return tensor_bytes(torch::arange(1, n + 1, torch::kFloat)); };
  write_archive(path, {{"data.pkl", pkl}, {"data/0", floats(6)}, {"data/1", floats(4)}, {"data/2", floats(6)},
                       {"data/3", floats(6)}});
  TorchZipFile file(path.string());
  const auto own = [](const at::Tensor& t) {
    return t.storage().data_ptr().get_deleter() == c10::GetCPUAllocator()->raw_deleter() &&
           t.storage().nbytes() == static_cast<size_t>(t.numel()) * 4;
  };
  const at::Tensor alone = file.load("alone");
  EXPECT_TRUE(own(alone));
  EXPECT_TRUE(torch::equal(alone, torch::arange(1, 7, torch::kFloat).reshape({2, 3})));
  const at::Tensor a = file.load("tied_a"), b = file.load("tied_b");
  EXPECT_FALSE(own(a));
  EXPECT_EQ(a.data_ptr(), b.data_ptr()) << "tied weights share one record, as torch.load";
  EXPECT_FALSE(own(file.load("part")));
  EXPECT_TRUE(torch::equal(file.load("part"), torch::arange(2, 7, torch::kFloat)));
  const at::Tensor t = file.load("transposed");
  EXPECT_FALSE(own(t));
  EXPECT_TRUE(torch::equal(t, torch::arange(1, 7, torch::kFloat).reshape({2, 3}).t()));
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
  EXPECT_TRUE(Contains(open_error(archive_with(p.done())), "expand to more than 1000000 entries"));
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

}  // namespace
}  // namespace poslens
