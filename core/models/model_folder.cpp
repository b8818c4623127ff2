#include "core/models/model_folder.h"

#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include "core/base/atomic_file.h"
#include "core/base/error.h"
#include "core/formats/safetensors.h"

namespace poslens {
namespace fs = std::filesystem;

void write_model_folder(const std::string& dir, const std::string& config_json,
                        const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                        const std::map<std::string, std::string>& metadata, const std::string& what,
                        const std::function<void(const std::string& folder)>& extra) {
  if (fs::exists(dir)) throw Error(what + ": " + dir + " already exists; choose a new folder");
  AtomicOutput out(dir, AtomicOutput::Kind::Folder);
  const fs::path tmp(out.path());
  try {
    fs::create_directories(tmp);
    std::ofstream config(tmp / "config.json");
    config << config_json << "\n";
    config.close();
    if (!config) throw Error(what + ": cannot write " + (tmp / "config.json").string());
    std::vector<std::pair<std::string, at::Tensor>> cpu;
    for (const auto& [name, t] : tensors) cpu.emplace_back(name, t.detach().to(torch::kCPU));
    write_safetensors((tmp / "model.safetensors").string(), cpu, metadata);
    if (extra) extra(tmp.string());
    out.commit();
  } catch (const fs::filesystem_error& e) {
    throw Error(what + ": " + std::string(e.what()));
  }
}

}  // namespace poslens
