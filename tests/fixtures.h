#pragma once
// Access to ../shared/fixtures (path passed in through CMake) and scratch folders for tests.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace poslens::test {

inline std::filesystem::path fixtures_dir() { return POSLENS_FIXTURES_DIR; }

inline std::filesystem::path stories_dir() { return fixtures_dir() / "stories260K"; }

/// A fresh, empty folder under the system temp dir, unique to the running test.
inline std::filesystem::path scratch_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  auto dir = std::filesystem::temp_directory_path() / "poslens-tests" /
             (std::string(info->test_suite_name()) + "." + info->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace poslens::test

/// Skips the current test with a clear message when the stories260K fixture is absent.
#define POSLENS_REQUIRE_STORIES()                                                           \
  do {                                                                                      \
    if (!std::filesystem::exists(::poslens::test::stories_dir() / "stories260K.bin"))       \
      GTEST_SKIP() << "fixture absent: " << ::poslens::test::stories_dir()                  \
                   << " (PosLens tests read ../shared/fixtures; pass -DPOSLENS_FIXTURES_DIR)"; \
  } while (0)
