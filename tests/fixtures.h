#pragma once
// Access to ../shared/fixtures (path passed in through CMake) and scratch folders for tests.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include <unistd.h>
#include <string>

#include "core/base/error.h"

namespace poslens::test {

inline std::filesystem::path fixtures_dir() { return POSLENS_FIXTURES_DIR; }

inline std::filesystem::path stories_dir() { return fixtures_dir() / "stories260K"; }
inline std::filesystem::path tokenizers_dir() { return fixtures_dir() / "tokenizers"; }

/// This process's scratch root: per process, since ctest runs the suite twice at once
/// (poslens_core_tests_small_blocks); removed when the process exits.
inline const std::filesystem::path& scratch_root() {
  static const struct Root {
    std::filesystem::path path = std::filesystem::temp_directory_path() /
                                 ("poslens-tests-" + std::to_string(static_cast<long>(::getpid())));
    ~Root() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  } root;
  return root.path;
}

/// A fresh, empty folder under the scratch root, unique to the running test.
inline std::filesystem::path scratch_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  auto dir = scratch_root() / (std::string(info->test_suite_name()) + "." + info->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
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

/// Success when `message` contains `needle`; otherwise a failure that shows both.
inline ::testing::AssertionResult Contains(const std::string& message, const std::string& needle) {
  if (message.find(needle) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "message \"" << message << "\" lacks \"" << needle
                                       << "\"";
}

/// True when a missing prerequisite (fixture, Python with torch or h5py, the CLI binary) must
/// fail the test instead of skipping it: POSLENS_TESTS_STRICT=1, which scripts/test.sh (and so
/// CI) sets — a run that skipped them could pass having tested nothing.
inline bool strict_prerequisites() {
  const char* value = std::getenv("POSLENS_TESTS_STRICT");
  return value != nullptr && std::string(value) == "1";
}

}  // namespace poslens::test

/// Ends the current test for a missing prerequisite: a skip with `message`, or a failure under
/// POSLENS_TESTS_STRICT=1. (Only a CUDA device may be missing in strict runs: those tests skip.)
#define POSLENS_MISSING_PREREQUISITE(message)                                                \
  do {                                                                                      \
    if (::poslens::test::strict_prerequisites())                                            \
      FAIL() << message << " (POSLENS_TESTS_STRICT=1: a missing prerequisite fails)";      \
    else                                                                                    \
      GTEST_SKIP() << message;                                                              \
  } while (0)

/// Ends the current test (skip, or failure when strict) when the stories260K fixture is absent.
#define POSLENS_REQUIRE_STORIES()                                                           \
  do {                                                                                      \
    if (!std::filesystem::exists(::poslens::test::stories_dir() / "stories260K.bin"))       \
      POSLENS_MISSING_PREREQUISITE("fixture absent: " << ::poslens::test::stories_dir()     \
                   << " (PosLens tests read ../shared/fixtures; pass -DPOSLENS_FIXTURES_DIR)"); \
  } while (0)

/// Ends the current test (skip, or failure when strict) when the tokenizer fixtures are absent.
#define POSLENS_REQUIRE_TOKENIZERS()                                                        \
  do {                                                                                      \
    if (!std::filesystem::is_directory(::poslens::test::tokenizers_dir()))                  \
      POSLENS_MISSING_PREREQUISITE("fixture absent: " << ::poslens::test::tokenizers_dir()  \
                   << " (PosLens tests read ../shared/fixtures; pass -DPOSLENS_FIXTURES_DIR)"); \
  } while (0)
