#pragma once
// Several weight files behind one index: Hugging Face transformers' sharding convention
// (`model.safetensors.index.json`, `pytorch_model.bin.index.json`), whatever the shards' format.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/formats/tensor_source.h"

namespace poslens {

/// Opens one shard file (its path) as a TensorSource; it throws poslens::Error naming the file
/// when the file is not valid (e.g. [](auto& p) { return std::make_unique<SafetensorsFile>(p); }).
using ShardOpener = std::function<std::unique_ptr<TensorSource>(const std::string& shard_path)>;

/// The shards an index names, read as one source. The index is JSON {"metadata": {...},
/// "weight_map": {tensor: shard file}} as transformers' save_pretrained and huggingface_hub's
/// save_torch_state_dict write it ("metadata" is not read). Shard names must be plain file names
/// in the index's folder (no "/", "\\" or ".."); every name is checked before any file is opened,
/// then each distinct shard is opened once with `open`, in order of first mention. tensors()
/// lists the weight_map's tensors in index order (tensors a shard holds but the index does not
/// name are not exposed); load() and release() go to the tensor's shard; describe() is the index
/// path. Throws poslens::Error naming the index when it is missing, larger than 100 MB, not a
/// JSON object, has no "weight_map" object, a non-string or non-plain shard name, or puts a
/// tensor in a shard that lacks it; the opener's errors pass through.
class ShardedTensors : public TensorSource {
 public:
  ShardedTensors(const std::string& index_json_path, const ShardOpener& open);
  ~ShardedTensors() override;
  ShardedTensors(const ShardedTensors&) = delete;
  ShardedTensors& operator=(const ShardedTensors&) = delete;

  const std::vector<TensorInfo>& tensors() const override;
  /// The shard's load() of `name`; throws poslens::Error if the weight_map does not name it.
  at::Tensor load(const std::string& name) const override;
  std::string describe() const override;
  void release(const std::string& name) const override;
  /// The shards' describe() (their paths), in order of first mention in the index.
  std::vector<std::string> shard_paths() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace poslens
