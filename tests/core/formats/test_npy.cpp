// core/formats/npy.h against files NumPy wrote (tests/data/npy/README.md) and damaged copies.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/formats/npy.h"
#include "fixtures.h"

namespace poslens {
namespace {

using ::testing::HasSubstr;

std::string data(const std::string& name) {
  return (std::filesystem::path(POSLENS_SOURCE_DIR) / "tests" / "data" / "npy" / name).string();
}

constexpr std::uint64_t kLimit = 1 << 20;

std::string error_reading(const std::string& path) {
  return test::error_of([&] { read_npy_integers(path, kLimit); });
}

TEST(Npy, ReadsTheIntegerArraysNumpyWrote) {
  EXPECT_EQ(read_npy_integers(data("ids_int64.npy"), kLimit), (std::vector<int64_t>{1, 403, 407, 261, 0, 511}));
  EXPECT_EQ(read_npy_integers(data("ids_int32_row.npy"), kLimit), (std::vector<int64_t>{1, 403, 407, 261}));
  EXPECT_EQ(read_npy_integers(data("ids_uint16.npy"), kLimit), (std::vector<int64_t>{1, 65535}));
  EXPECT_EQ(read_npy_integers(data("ids_int8_negative.npy"), kLimit), (std::vector<int64_t>{-1, 2}));
}

TEST(Npy, RefusesWhatIsNotOneSequenceOfLittleEndianIntegers) {
  EXPECT_THAT(error_reading(data("floats.npy")), HasSubstr("must be integers"));
  EXPECT_THAT(error_reading(data("floats.npy")), HasSubstr("<f4"));
  EXPECT_THAT(error_reading(data("ids_big_endian.npy")), HasSubstr(">i8"));
  EXPECT_THAT(error_reading(data("ids_fortran.npy")), HasSubstr("Fortran order"));
  EXPECT_THAT(error_reading(data("ids_2x3.npy")), HasSubstr("shape (T,) or (1, T), not the .npy's (2, 3)"));
}

TEST(Npy, DamagedFilesAreOneMessageNamingTheFile) {
  const auto dir = test::scratch_dir();
  std::ifstream in(data("ids_int64.npy"), std::ios::binary);
  const std::string good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir / name, std::ios::binary) << bytes;
    return (dir / name).string();
  };
  const auto cut = write("cut.npy", good.substr(0, good.size() - 3));
  EXPECT_THAT(error_reading(cut), HasSubstr("the .npy shape says 6 ids of 8 bytes, the file has 45 bytes"));
  EXPECT_THAT(error_reading(cut), HasSubstr("cut.npy"));
  EXPECT_THAT(error_reading(write("long.npy", good + "x")), HasSubstr("49 bytes of data"));
  EXPECT_THAT(error_reading(write("text.npy", "1,2,3\n")), HasSubstr("not a .npy file"));
  std::string header_past_end = good.substr(0, 10);
  header_past_end[8] = '\xff', header_past_end[9] = '\x7f';  // header length 32767
  EXPECT_THAT(error_reading(write("header.npy", header_past_end)), HasSubstr("more than the file holds"));
  std::string version = good;
  version[6] = 9;
  EXPECT_THAT(error_reading(write("version.npy", version)), HasSubstr("version 9"));
  EXPECT_THAT(test::error_of([&] { read_npy_integers(data("ids_int64.npy"), 100); }), HasSubstr("ids_int64.npy"));
  EXPECT_THAT(error_reading((dir / "missing.npy").string()), HasSubstr("missing.npy"));
}

}  // namespace
}  // namespace poslens
