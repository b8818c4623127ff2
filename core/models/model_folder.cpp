#include "core/models/model_folder.h"

#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "core/base/error.h"
#include "core/formats/safetensors.h"

namespace poslens {
namespace fs = std::filesystem;

void write_model_folder(const std::string& dir, const std::string& config_json,
                        const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                        const std::map<std::string, std::string>& metadata, const std::string& what,
                        const std::function<void(const std::string& folder)>& extra) {
  const fs::path target(dir);
  if (fs::exists(target)) throw Error(what + ": " + dir + " already exists; choose a new folder");
  const fs::path tmp = target.string() + ".tmp-" + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(tmp, ec);
  try {
    fs::create_directories(tmp);
    std::ofstream out(tmp / "config.json");
    out << config_json << "\n";
    out.close();
    if (!out) throw Error(what + ": cannot write " + (tmp / "config.json").string());
    std::vector<std::pair<std::string, at::Tensor>> cpu;
    for (const auto& [name, t] : tensors) cpu.emplace_back(name, t.detach().to(torch::kCPU));
    write_safetensors((tmp / "model.safetensors").string(), cpu, metadata);
    if (extra) extra(tmp.string());
    fs::rename(tmp, target);
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(tmp, ec);
    throw Error(what + ": " + std::string(e.what()));
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
}

}  // namespace poslens
