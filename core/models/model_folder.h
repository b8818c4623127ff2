#pragma once
// Writing a model folder (config.json + model.safetensors) so that a failure leaves nothing.
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace poslens {

/// Writes `config_json` and `tensors` (any device and dtype; written as they are, moved to the
/// CPU) as `dir`/config.json and `dir`/model.safetensors. `dir` must not exist; the folder is
/// assembled in a temporary sibling and renamed, so a failure or a kill leaves no half-written
/// folder. `what` prefixes error messages ("convert", "save"). Throws poslens::Error when `dir`
/// exists or on any I/O error. `extra` (optional) is called with the temporary folder's path
/// to add more files before the rename; whatever it throws aborts the write the same way.
void write_model_folder(const std::string& dir, const std::string& config_json,
                        const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                        const std::map<std::string, std::string>& metadata, const std::string& what,
                        const std::function<void(const std::string& folder)>& extra = {});

}  // namespace poslens
