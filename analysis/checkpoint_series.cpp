#include "analysis/checkpoint_series.h"

#include <algorithm>
#include <filesystem>
#include <regex>

#include "core/base/error.h"

namespace poslens {

namespace fs = std::filesystem;

int64_t step_from_name(const std::string& name) {
  static const std::regex pattern("step-([0-9]{1,12})");
  std::smatch m;
  return std::regex_match(name, m, pattern) ? std::stoll(m[1].str()) : -1;
}

std::string checkpoint_label(const std::string& checkpoint) {
  fs::path p(checkpoint);
  if (p.filename().empty()) p = p.parent_path();
  const auto name = p.filename().string();
  return step_from_name(name) >= 0 && !p.parent_path().filename().empty()
             ? (p.parent_path().filename() / name).string()
             : name;
}

std::vector<std::string> series_checkpoints(const std::string& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) throw Error("'" + folder + "' is not a folder");
  std::vector<std::pair<int64_t, std::string>> found;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const int64_t step = step_from_name(entry.path().filename().string());
    if (step >= 0 && entry.is_directory(ec)) found.emplace_back(step, entry.path().string());
  }
  if (ec) throw Error("cannot list '" + folder + "': " + ec.message());
  if (found.empty())
    throw Error("'" + folder + "' holds no checkpoint folders named step-NNNNNN");
  std::sort(found.begin(), found.end());
  std::vector<std::string> paths;
  for (auto& f : found) paths.push_back(std::move(f.second));
  return paths;
}

}  // namespace poslens
