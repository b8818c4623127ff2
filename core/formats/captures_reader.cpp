#include "core/formats/captures_reader.h"

#include <torch/torch.h>

#include "core/base/error.h"

namespace poslens {

std::vector<CapturedHook> read_captured_hooks(const Hdf5Reader& file) {
  if (!file.exists("/captures")) throw Error(file.path() + ": has no /captures group (not a file `run` wrote)");
  std::vector<CapturedHook> hooks;
  for (const auto& name : file.children("/captures")) hooks.push_back({name, file.shape("/captures/" + name)});
  return hooks;
}

std::optional<CapturedHeadMap> read_captured_head_map(const Hdf5Reader& file, int layer, const std::string& hook,
                                                      int head) {
  const std::string path = "/captures/blocks." + std::to_string(layer) + ".attn." + hook;
  if (!file.exists(path)) return std::nullopt;
  const auto shape = file.shape(path);
  if (shape.size() != 4 || head < 0 || head >= shape[1]) return std::nullopt;
  CapturedHeadMap map;
  map.values = file.read_slice(path, {0, head}).to(torch::kFloat32);
  map.source_length = file.int_attribute(path, "source_length", shape[2]);
  return map;
}

}  // namespace poslens
