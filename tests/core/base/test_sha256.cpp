// sha256_of_files: FIPS 180-2's known answers, files read one after the other.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/base/error.h"
#include "core/base/sha256.h"
#include "fixtures.h"

namespace poslens {
namespace {

/// A file holding `bytes` in `dir`.
std::string file_with(const std::filesystem::path& dir, const std::string& name, const std::string& bytes) {
  const auto path = (dir / name).string();
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(Sha256, KnownAnswersAndFilesReadOneAfterTheOther) {
  const auto dir = test::scratch_dir();
  // FIPS 180-2, appendix B.1 ("abc") and the empty message.
  EXPECT_EQ(sha256_of_files({file_with(dir, "abc", "abc")}),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_of_files({file_with(dir, "empty", "")}),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_of_files({file_with(dir, "a", "a"), file_with(dir, "bc", "bc")}),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_THROW(sha256_of_files({(dir / "none").string()}), Error);
}

}  // namespace
}  // namespace poslens
