// check_hdf5_in_child: an analysis file from outside is read in a child process first, so the
// files that crash or hang libhdf5 1.10 (tests/data/fuzz/analysis_hdf5, README there) give one
// message instead of taking the GUI down.
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/base/error.h"
#include "core/formats/hdf5_check.h"
#include "core/formats/hdf5_export.h"
#include "core/formats/hdf5_reader.h"
#include "core/formats/hdf5_strings.h"
#include "fixtures.h"

namespace poslens {
namespace {

namespace fs = std::filesystem;

fs::path hostile(const std::string& name) {
  return fs::path(POSLENS_SOURCE_DIR) / "tests/data/fuzz/analysis_hdf5" / name;
}

std::string error_of(const std::string& path, double timeout_s = 20) {
  try {
    check_hdf5_in_child(path, timeout_s);
  } catch (const Cancelled&) {
    return "cancelled";
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Hdf5Check, AFilePosLensWroteReadsCleanly) {
  const auto path = (test::scratch_dir() / "a.h5").string();
  write_analysis_hdf5(path, {{"/analysis/x", torch::rand({3, 4, 5}), {}, {"layer", "q", "k"}, {}}},
                      {{"/analysis", {{"T", int64_t{5}}, {"name", std::string("probe")}}}},
                      torch::tensor({{1, 2, 3}}, torch::kLong), {"a", "b", "c"},
                      ExportMetadata{"9.9", "{}", "/m/model.bin", "cpu", "float32", ""});
  EXPECT_EQ(error_of(path), "");
  // Past the numeric budget only the first and last maps are read; still clean.
  EXPECT_NO_THROW(check_hdf5_in_child(path, 20, {}, 16));

  // The child hands back every string it read; a reader given them returns what a plain one reads.
  const auto strings = std::make_shared<const Hdf5Strings>(check_hdf5_in_child(path));
  const Hdf5Reader plain(path), checked(path, strings);
  EXPECT_EQ(checked.string_attribute("/analysis", "name"), "probe");
  EXPECT_EQ(checked.read_strings("/tokens/text"), plain.read_strings("/tokens/text"));
  EXPECT_EQ(checked.read_strings("/tokens/text"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(checked.string_list_attribute("/analysis/x", "dims"), plain.string_list_attribute("/analysis/x", "dims"));
  EXPECT_EQ(checked.string_attribute("/", "poslens_version"), "9.9");
  EXPECT_EQ(checked.string_attribute("/", "checkpoint"), plain.string_attribute("/", "checkpoint"));
  EXPECT_EQ(checked.string_attribute("/", "checkpoint"), "/m/model.bin");
  EXPECT_EQ(checked.string_attribute("/analysis", "absent"), "");
}

TEST(Hdf5Check, AReaderGivenTheChildsStringsReadsNoStringFromTheFile) {
  const auto path = (test::scratch_dir() / "b.h5").string();
  write_analysis_hdf5(path, {{"/analysis/x", torch::rand({2, 2}), {}, {"q", "k"}, {}}},
                      {{"/analysis", {{"name", std::string("probe")}}}}, torch::tensor({{1, 2}}, torch::kLong),
                      {"a", "b"}, {});
  auto strings = check_hdf5_in_child(path);
  // Values the file does not hold: returned, so they came from the table, not the file.
  strings.values[Hdf5Strings::attribute_key("/analysis", "name")] = {"from the child"};
  strings.values[Hdf5Strings::dataset_key("/tokens/text")] = {"x", "y"};
  auto without_dims = strings;
  without_dims.values.erase(Hdf5Strings::attribute_key("/analysis/x", "dims"));
  const Hdf5Reader reader(path, std::make_shared<const Hdf5Strings>(without_dims));
  EXPECT_EQ(reader.string_attribute("/analysis", "name"), "from the child");
  EXPECT_EQ(reader.read_strings("/tokens/text"), (std::vector<std::string>{"x", "y"}));
  try {
    reader.string_list_attribute("/analysis/x", "dims");
    ADD_FAILURE() << "a string the child did not read must not be read here";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("attribute dims of /analysis/x was not read when the file was checked"),
              std::string::npos)
        << e.what();
  }
  strings.values[Hdf5Strings::dataset_key("/tokens/text")] = {"x"};
  const Hdf5Reader wrong_size(path, std::make_shared<const Hdf5Strings>(strings));
  EXPECT_THROW(wrong_size.read_strings("/tokens/text"), Error);
}

TEST(Hdf5Strings, SerialisedStringsParseBackAndDamagedBytesAreAnError) {
  Hdf5Strings s;
  s.values[Hdf5Strings::dataset_key("/tokens/text")] = {"a", "", std::string("b\0c", 3), "ünï"};
  s.values[Hdf5Strings::attribute_key("/", "checkpoint")] = {"/m/model.bin"};
  s.values[Hdf5Strings::attribute_key("/x", "empty")] = {};
  const auto bytes = s.serialise();
  EXPECT_EQ(Hdf5Strings::parse(bytes, "f.h5").values, s.values);
  EXPECT_TRUE(Hdf5Strings::parse("", "f.h5").values.empty());
  for (const size_t cut : {size_t{1}, size_t{8}, bytes.size() / 2, bytes.size() - 1})
    EXPECT_THROW(Hdf5Strings::parse(bytes.substr(0, cut), "f.h5"), Error) << cut;
  // A count of 2^64 - 1 strings: refused by what is left, not allocated.
  const std::string huge = std::string("\x01\0\0\0\0\0\0\0", 8) + "d" + std::string(8, '\xff');
  try {
    Hdf5Strings::parse(huge, "f.h5");
    ADD_FAILURE() << "a count past the bytes left must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("f.h5: the strings read in the child process arrived damaged", 0), 0u);
  }
}

TEST(Hdf5Check, MissingForeignAndTruncatedFilesGetTheReadersMessages) {
  const auto dir = test::scratch_dir();
  EXPECT_EQ(error_of((dir / "none.h5").string()), (dir / "none.h5").string() + ": no such file");
  std::ofstream(dir / "junk.h5") << "not an HDF5 file";
  EXPECT_EQ(error_of((dir / "junk.h5").string()), (dir / "junk.h5").string() + ": not an HDF5 file");
  const auto path = (dir / "whole.h5").string();
  write_analysis_hdf5(path, {{"/analysis/x", torch::rand({64, 64}), {}, {"q", "k"}, {}}}, {}, {}, {}, {});
  std::stringstream bytes;
  bytes << std::ifstream(path, std::ios::binary).rdbuf();
  std::ofstream(dir / "half.h5", std::ios::binary) << bytes.str().substr(0, bytes.str().size() / 2);
  const auto message = error_of((dir / "half.h5").string());
  EXPECT_EQ(message.rfind((dir / "half.h5").string() + ": ", 0), 0u) << message;
}

TEST(Hdf5Check, FilesThatCrashOrHangTheLibraryAreRefusedWithOneMessage) {
  // Each of these made libhdf5 itself segfault or loop (h5py too). The loops are certain; the
  // crashes are reads past a corrupted heap object, so what they meet depends on the memory the
  // child inherited: a segfault in one process, garbage read without notice in another (the CI
  // machine's test binary read crash-global-heap-2.h5 "cleanly" at one point of the suite). What
  // must hold always: the test process lives, and every refusal is one message naming the file.
  // The crash path itself is IsolatedRun.ACrashEndsTheChildNotTheParent.
  int hang_files = 0;
  for (const auto& e : fs::directory_iterator(hostile(""))) {
    if (e.path().extension() != ".h5") continue;
    const auto message = error_of(e.path().string(), 3);
    SCOPED_TRACE(e.path().filename().string() + ": " + message);
    const bool hangs = e.path().filename().string().rfind("hang-", 0) == 0;
    if (hangs) {
      EXPECT_NE(message.find("did not finish reading it within 3 s"), std::string::npos);
    }
    if (!message.empty()) {
      EXPECT_EQ(message.rfind(e.path().string() + ": ", 0), 0u);
    }
    hang_files += hangs;
  }
  EXPECT_EQ(hang_files, 2);
}

TEST(Hdf5Check, CancellingStopsTheCheck) {
  EXPECT_THROW(check_hdf5_in_child(hostile("hang-global-heap.h5").string(), 600, [] { return true; }), Cancelled);
}

}  // namespace
}  // namespace poslens
