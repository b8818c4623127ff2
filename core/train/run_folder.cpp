#include "core/train/run_folder.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "core/base/atomic_file.h"
#include "core/base/error.h"

namespace poslens::train {
namespace fs = std::filesystem;

std::string checkpoint_name(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "step-%06lld", static_cast<long long>(step));
  return name;
}

std::vector<int64_t> checkpoint_steps(const std::string& run_dir) {
  static const std::regex pattern("step-([0-9]{6,18})");
  std::vector<int64_t> steps;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(run_dir, ec)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && std::regex_match(name, m, pattern) &&
        fs::exists(entry.path() / "trainer_state.json"))
      steps.push_back(std::stoll(m[1].str()));
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

void remove_partial_checkpoints(const std::string& run_dir) {
  static const std::regex pattern("step-[0-9]+\\.tmp-[0-9]+(-[0-9]+)?");
  std::error_code ec;
  std::vector<fs::path> partial;
  for (const auto& entry : fs::directory_iterator(run_dir, ec))
    if (std::regex_match(entry.path().filename().string(), pattern)) partial.push_back(entry.path());
  for (const auto& path : partial) fs::remove_all(path, ec);
}

void write_text_file(const std::string& path, const std::string& text) {
  write_file_atomically(path, text);
}

void truncate_log(const std::string& log_path, int64_t step) {
  std::ifstream in(log_path);
  if (!in) return;
  std::string kept, line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("step") && j["step"].is_number_integer() &&
        j["step"].get<int64_t>() <= step)
      kept += line + "\n";
  }
  write_text_file(log_path, kept);
}

void append_log(const std::string& log_path, const std::string& json_line) {
  std::ofstream out(log_path, std::ios::app);
  out << json_line << "\n";
  out.flush();
  if (!out) throw Error("cannot append to " + log_path);
}

}  // namespace poslens::train
