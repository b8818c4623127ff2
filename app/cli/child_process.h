#pragma once
// Running another program from poslens-cli (the sweep's items, sbatch): posix_spawn with the
// argument vector as given — no shell, so paths with spaces or quotes need no quoting.
#include <string>
#include <vector>

namespace poslens::cli {

/// This poslens-cli's own executable (/proc/self/exe), for running items as children.
std::string self_executable();

/// Runs argv[0] (looked up on PATH when it has no '/') with `argv`, its stdout and stderr
/// appended to `log_path` (created), and waits. Returns its exit status (128 + signal when
/// killed). Throws poslens::Error when it cannot be started or the log cannot be opened.
int run_logged(const std::vector<std::string>& argv, const std::string& log_path);

/// Runs `argv` (PATH lookup as above) and returns what it printed on stdout; its stderr goes
/// to ours. Throws poslens::Error naming the program when it cannot be started or exits
/// non-zero.
std::string run_captured(const std::vector<std::string>& argv);

}  // namespace poslens::cli
