// Reader: poslens::ShardedTensors over safetensors shards (core/formats/sharded_tensors.cpp) - the
// `model.safetensors.index.json` of a sharded checkpoint ({"weight_map": {tensor: shard}}).
// Input: the index JSON. The reader only takes a path: the input is written to
// /dev/shm/poslens-fuzz-<pid>/model.safetensors.index.json, beside two small valid shards
// written once at start-up (model-00001-of-00002.safetensors: tensors "a", "b";
// model-00002-of-00002.safetensors: "c", "d"), so that the fuzzer can reach the shard lookups.
// Expected: poslens::Error for a malformed index, a shard name that is not a plain file name,
// a missing shard or tensor. Findings: any other exception, a sanitizer report, a shard opened
// outside the index's folder, or an accepted index whose tensors cannot be loaded.
#include <cstdint>
#include <memory>
#include <string>

#include "core/formats/safetensors.h"
#include "core/formats/sharded_tensors.h"
#include "fuzz_common.h"

using namespace poslens;

namespace {

/// A safetensors file of F32 tensors `first` [2] and `second` [2, 2].
std::string shard(const std::string& first, const std::string& second) {
  std::string header = "{\"" + first + "\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"" +
                       second + "\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[8,24]}}";
  while (header.size() % 8 != 0) header += ' ';
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + std::string(24, '\x3f');
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::write_file(fuzz::scratch_path("model-00001-of-00002.safetensors"), shard("a", "b"));
  fuzz::write_file(fuzz::scratch_path("model-00002-of-00002.safetensors"), shard("c", "d"));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::scratch_path("model.safetensors.index.json");
  fuzz::write_file(path, data, size);
  fuzz::refuse([&] {
    const ShardedTensors index(path, [](const std::string& p) { return std::make_unique<SafetensorsFile>(p); });
    for (const std::string& shard_path : index.shard_paths())
      if (shard_path.rfind(fuzz::scratch_dir() + "/", 0) != 0 || shard_path.find("/..") != std::string::npos)
        fuzz::finding("shard opened outside the index's folder: " + shard_path);
    for (const TensorInfo& info : index.tensors()) {
      const at::Tensor t = index.load(info.name);
      if (t.sizes().vec() != info.shape) fuzz::finding("tensor " + info.name + ": shape differs from tensors()");
      fuzz::keep(fuzz::touch_tensor(t));
      index.release(info.name);
    }
    fuzz::keep(index.describe());
  });
  return 0;
}
