#include "core/formats/sharded_tensors.h"

#include <filesystem>
#include <unordered_map>
#include <utility>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "core/base/error.h"
#include "core/base/text.h"
#include "core/base/untrusted_json.h"

namespace poslens {
namespace {

using ojson = nlohmann::ordered_json;  // keeps the index's order ("tensors in index order")

/// Largest accepted index.json; real ones are a few hundred kB.
constexpr std::uint64_t kMaxIndexBytes = 100'000'000;

bool is_plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find('/') == std::string::npos && name.find('\\') == std::string::npos &&
         name.find('\0') == std::string::npos && name.find("..") == std::string::npos;
}

/// The index's "weight_map" object, every entry checked to name a plain shard file.
ojson weight_map_of(const std::string& index_path) {
  const std::string text = read_small_file(index_path, kMaxIndexBytes);
  ojson index = parse_untrusted_json(text.data(), text.data() + text.size(), index_path, "index");
  if (!index.is_object()) {
    throw Error(index_path + ": index is a JSON " + std::string(index.type_name()) +
                ", expected an object with \"weight_map\"");
  }
  const auto wm = index.find("weight_map");
  if (wm == index.end() || !wm->is_object()) {
    throw Error(index_path + ": missing object \"weight_map\" {tensor: shard file}");
  }
  for (const auto& item : wm->items()) {
    if (!item.value().is_string()) {
      throw Error(index_path + ": weight_map entry for tensor " + quoted(item.key()) + " is a JSON " +
                  std::string(item.value().type_name()) + ", expected a shard file name");
    }
    const std::string& shard = item.value().get_ref<const std::string&>();
    if (!is_plain_file_name(shard)) {
      throw Error(index_path + ": weight_map entry for tensor " + quoted(item.key()) + " names shard " +
                  quoted(shard) + ", which is not a plain file name inside the index's folder");
    }
  }
  return std::move(*wm);
}

}  // namespace

struct ShardedTensors::Impl {
  std::string index_path;
  std::vector<std::unique_ptr<TensorSource>> shards;  // order of first mention
  std::vector<TensorInfo> infos;                      // weight_map order
  std::unordered_map<std::string, const TensorSource*> owner;
};

ShardedTensors::ShardedTensors(const std::string& index_json_path, const ShardOpener& open)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.index_path = index_json_path;
  const ojson weight_map = weight_map_of(index_json_path);
  const std::filesystem::path folder = std::filesystem::path(index_json_path).parent_path();
  std::unordered_map<std::string, const TensorSource*> by_shard_name;
  std::unordered_map<const TensorSource*, std::unordered_map<std::string, const TensorInfo*>> shard_tensors;
  for (const auto& item : weight_map.items()) {
    const std::string& tensor = item.key();
    const std::string& shard = item.value().get_ref<const std::string&>();
    auto found = by_shard_name.find(shard);
    if (found == by_shard_name.end()) {
      m.shards.push_back(open((folder / shard).string()));
      found = by_shard_name.emplace(shard, m.shards.back().get()).first;
    }
    const TensorSource* file = found->second;
    auto& names = shard_tensors[file];
    if (names.empty()) {
      for (const TensorInfo& t : file->tensors()) names.emplace(t.name, &t);
    }
    const auto info = names.find(tensor);
    if (info == names.end()) {
      throw Error(index_json_path + ": weight_map puts tensor " + quoted(tensor) + " in " + file->describe() +
                  ", which has no tensor of that name");
    }
    m.infos.push_back(*info->second);
    m.owner.emplace(tensor, file);
  }
}

ShardedTensors::~ShardedTensors() = default;

const std::vector<TensorInfo>& ShardedTensors::tensors() const { return impl_->infos; }

at::Tensor ShardedTensors::load(const std::string& name) const {
  const auto it = impl_->owner.find(name);
  if (it == impl_->owner.end()) {
    throw Error(impl_->index_path + ": weight_map has no tensor named " + quoted(name));
  }
  return it->second->load(name);
}

std::string ShardedTensors::describe() const { return impl_->index_path; }

std::vector<std::string> ShardedTensors::shard_paths() const {
  std::vector<std::string> paths;
  for (const auto& shard : impl_->shards) paths.push_back(shard->describe());
  return paths;
}

void ShardedTensors::release(const std::string& name) const {
  const auto it = impl_->owner.find(name);
  if (it != impl_->owner.end()) it->second->release(name);
}

}  // namespace poslens
