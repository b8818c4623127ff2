#include "app/cli/figure_option.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace poslens::cli {

bool figures_available() {
#ifdef POSLENS_CLI_FIGURES
  return true;
#else
  return false;
#endif
}

CLI::Option* add_figure_option(CLI::App* cmd, std::string& figure, const std::string& what,
                               const std::string& name) {
  const CLI::Validator drawable(
      [](std::string& path) -> std::string {
        if (!figures_available())
          return "this poslens-cli was built without Qt (POSLENS_BUILD_GUI=OFF), so it draws no "
                 "figures; leave the figure out (the HDF5 output has every number)";
        auto suffix = std::filesystem::path(path).extension().string();
        std::transform(suffix.begin(), suffix.end(), suffix.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (suffix != ".png" && suffix != ".pdf" && suffix != ".svg")
          return "'" + path + "': a figure is .png, .pdf or .svg";
        return "";
      },
      "FILE.png|.pdf|.svg", "figure");
  return cmd->add_option(name, figure, what)->check(drawable);
}

}  // namespace poslens::cli
