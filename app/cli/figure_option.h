#pragma once
// The `--figure FILE` option of the analysis commands, checked when the command line is parsed,
// before any model is loaded: a usage error (exit 2) rather than a failure after the work.
#include <string>

#include <CLI/CLI.hpp>

namespace poslens::cli {

/// True when this poslens-cli draws figures: built with Qt (POSLENS_BUILD_GUI, which defines
/// POSLENS_CLI_FIGURES); the GUI-less build for GPU servers does not.
bool figures_available();

/// Adds `--figure FILE` (or the option `name`) to `cmd` with the help text `what`. At parse time the option is refused
/// by a build without Qt ("built without Qt …; the HDF5 output has every number") and, in a
/// build with it, a FILE whose suffix is not .png, .pdf or .svg (any case).
CLI::Option* add_figure_option(CLI::App* cmd, std::string& figure, const std::string& what,
                               const std::string& name = "--figure");

}  // namespace poslens::cli
