#pragma once
// Running the real poslens-cli binary from a test: output (stdout and stderr) and exit code.
#include <gtest/gtest.h>

#include "fixtures.h"

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include <sys/wait.h>

namespace poslens::test {

struct CliResult {
  int code = -1;
  std::string output;  // stdout and stderr together
};

inline CliResult cli(const std::string& args) {
  if (!std::filesystem::exists(POSLENS_CLI_PATH)) return {-1, "no cli"};
  const std::string command = std::string(POSLENS_CLI_PATH) + " " + args + " 2>&1";
  CliResult r;
  FILE* pipe = popen(command.c_str(), "r");
  std::array<char, 4096> buf{};
  while (size_t n = fread(buf.data(), 1, buf.size(), pipe)) r.output.append(buf.data(), n);
  const int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/// A path quoted for the shell.
inline std::string q(const std::filesystem::path& p) { return "'" + p.string() + "'"; }

/// Whether the poslens-cli under test draws figures: built with Qt (POSLENS_BUILD_GUI defines
/// POSLENS_CLI_FIGURES for it and for this test binary); the GUI-less build refuses --figure.
#ifdef POSLENS_CLI_FIGURES
inline constexpr bool kCliDrawsFigures = true;
#else
inline constexpr bool kCliDrawsFigures = false;
#endif

/// Runs `args --figure FIGURE`. A CLI built without Qt must refuse the option as a usage error
/// before any work (exit 2, one message saying so, neither `out` nor FIGURE written); the
/// command then runs again without --figure, so the caller checks the same outputs in both
/// builds (and the figure where kCliDrawsFigures).
inline CliResult cli_with_figure(const std::string& args, const std::filesystem::path& figure,
                                 const std::filesystem::path& out) {
  const auto r = cli(args + " --figure " + q(figure));
  if (kCliDrawsFigures) return r;
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("built without Qt"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(out)) << "refused before any work";
  EXPECT_FALSE(std::filesystem::exists(figure));
  return cli(args);
}

/// A demo checkpoint of resources/demos/, quoted for the shell.
inline std::string demo(const std::string& name) {
  return q(std::filesystem::path(POSLENS_SOURCE_DIR) / "resources" / "demos" / name);
}

/// The stories260K fixture, quoted for the shell.
inline std::string stories() {
  return q(std::filesystem::path(POSLENS_FIXTURES_DIR) / "stories260K" / "stories260K.bin");
}

}  // namespace poslens::test

#define REQUIRE_CLI()                                                                   \
  if (!std::filesystem::exists(POSLENS_CLI_PATH))                                       \
  POSLENS_MISSING_PREREQUISITE("poslens-cli not built at " << POSLENS_CLI_PATH)
