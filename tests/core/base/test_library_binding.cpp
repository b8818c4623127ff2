// The C++ standard library's functions resolve to libstdc++, not to the copies the PyTorch
// wheels' libtorch.so exports (pytorch/pytorch#133437; CMakeLists.txt links libstdc++ first).
// Under LibTorch 2.x without that order, std::filesystem::remove_all bound to libtorch.so's copy
// and jumped to address 0: every test that made a scratch folder crashed, and every test process
// at exit. Under Debian's LibTorch 1.13 (no such exports) this holds trivially.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <filesystem>
#include <string>
#include <system_error>

#include "fixtures.h"

namespace poslens {
namespace {

/// The file of the loaded object that defines the function at `address`.
std::string defining_object(const void* address) {
  Dl_info info{};
  if (::dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "(dladdr found nothing)";
  return info.dli_fname;
}

TEST(LibraryBinding, StdFilesystemFunctionsComeFromLibstdcxx) {
  using RemoveAll = std::uintmax_t (*)(const std::filesystem::path&);
  using RemoveAllNoThrow = std::uintmax_t (*)(const std::filesystem::path&, std::error_code&);
  using Equivalent = bool (*)(const std::filesystem::path&, const std::filesystem::path&);
  const RemoveAll remove_all = &std::filesystem::remove_all;
  const RemoveAllNoThrow remove_all_no_throw = &std::filesystem::remove_all;
  const Equivalent equivalent = &std::filesystem::equivalent;
  for (const void* f : {reinterpret_cast<const void*>(remove_all),
                        reinterpret_cast<const void*>(remove_all_no_throw),
                        reinterpret_cast<const void*>(equivalent)})
    EXPECT_THAT(defining_object(f), testing::HasSubstr("libstdc++")) << "see CMakeLists.txt";
}

TEST(LibraryBinding, RemoveAllRemovesAFolderTree) {
  const auto dir = test::scratch_dir();  // itself a remove_all
  std::filesystem::create_directories(dir / "a" / "b");
  EXPECT_EQ(std::filesystem::remove_all(dir / "a"), 2u);
  std::error_code ec;
  EXPECT_EQ(std::filesystem::remove_all(dir / "missing", ec), 0u);
  EXPECT_FALSE(ec);
  EXPECT_FALSE(std::filesystem::exists(dir / "a"));
}

}  // namespace
}  // namespace poslens
