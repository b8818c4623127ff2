// poslens-cli: inspect checkpoints, run them and export captured tensors without a GUI.
// Exit codes: 0 success, 1 bad input or failure (one message on stderr), 2 usage error.
// The subcommands live in their own files (command_list.cpp lists them).
#include <torch/torch.h>

#include <chrono>
#include <iomanip>
#include <iostream>

#include <CLI/CLI.hpp>

#include "app/cli/command.h"
#include "core/base/compute_setup.h"
#include "core/base/error.h"
#include "core/runtime/device_memory.h"

namespace {

/// Commands that ran on CUDA end with their time and the peak device memory on stderr.
void report_device_use(std::chrono::steady_clock::time_point start) {
  if (!poslens::built_with_cuda() || !torch::cuda::is_available()) return;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (int64_t d = 0; d < static_cast<int64_t>(torch::cuda::device_count()); ++d) {
    const c10::Device device(c10::kCUDA, static_cast<c10::DeviceIndex>(d));
    const auto memory = poslens::device_memory(device);
    if (memory && memory->peak_bytes > 0)
      std::cerr << "poslens-cli: " << std::fixed << std::setprecision(2) << seconds << " s, peak device memory "
                << poslens::gib_text(memory->peak_bytes) << " of " << poslens::gib_text(memory->total_bytes)
                << " on " << device << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"PosLens command line: inspect transformer checkpoints, run them and export "
               "captured activations (HDF5)."};
  app.set_version_flag("--version", std::string("poslens-cli ") + POSLENS_VERSION);
  app.require_subcommand(1);

  auto commands = poslens::cli::all_commands();
  std::vector<CLI::App*> subcommands;
  for (auto& command : commands) subcommands.push_back(command.add(app));

  poslens::cli::Command* chosen = nullptr;
  try {
    app.parse(argc, argv);
    for (size_t i = 0; i < commands.size(); ++i)
      if (subcommands[i]->parsed()) chosen = &commands[i];
    if (chosen && chosen->check) chosen->check();
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }

  poslens::set_up_compute();
  const auto start = std::chrono::steady_clock::now();
  try {
    if (chosen) chosen->run();
    report_device_use(start);
  } catch (const poslens::Error& e) {
    std::cerr << "poslens-cli: error: " << e.what() << "\n";
    return 1;
  } catch (const c10::Error& e) {
    std::cerr << "poslens-cli: error: " << e.what_without_backtrace() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "poslens-cli: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
