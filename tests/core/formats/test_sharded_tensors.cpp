// ShardedTensors (core/formats/sharded_tensors.h): an index.json's weight_map over shard files
// of any format, here safetensors shards written by write_safetensors. The sharded
// pytorch_model.bin of a real model (written by huggingface_hub) is read in
// test_pytorch_checkpoints.cpp.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/formats/safetensors.h"
#include "core/formats/sharded_tensors.h"
#include "fixtures.h"

namespace poslens {
namespace {

using test::Contains;
using test::error_of;

namespace fs = std::filesystem;

const ShardOpener open_safetensors = [](const std::string& path) { return std::make_unique<SafetensorsFile>(path); };

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

void write_two_shards(const fs::path& dir) {
  write_safetensors((dir / "model-00001-of-00002.safetensors").string(),
                    {{"a", torch::tensor({1.0f, 2.0f})}, {"b", torch::tensor({int64_t{3}})}});
  write_safetensors((dir / "model-00002-of-00002.safetensors").string(),
                    {{"c", torch::full({2, 2}, 7.0f)}});
}

TEST(ShardedTensors, ShardedIndexWithTwoShards) {
  const fs::path dir = test::scratch_dir();
  write_two_shards(dir);
  const fs::path index = dir / "model.safetensors.index.json";
  write_file(index, R"({"metadata": {"total_size": 32}, "weight_map": {
      "c": "model-00002-of-00002.safetensors",
      "a": "model-00001-of-00002.safetensors",
      "b": "model-00001-of-00002.safetensors"}})");
  ShardedTensors source(index.string(), open_safetensors);
  EXPECT_EQ(source.describe(), index.string());
  const auto& infos = source.tensors();
  ASSERT_EQ(infos.size(), 3u);
  EXPECT_EQ(infos[0].name, "c");  // index order
  EXPECT_EQ(infos[0].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(infos[1].name, "a");
  EXPECT_EQ(infos[2].name, "b");
  EXPECT_EQ(infos[2].dtype, StoredDType::I64);
  EXPECT_FLOAT_EQ(source.load("a")[1].item<float>(), 2.0f);
  EXPECT_EQ(source.load("b")[0].item<int64_t>(), 3);
  EXPECT_FLOAT_EQ(source.load("c")[1][1].item<float>(), 7.0f);
  const std::string msg = error_of([&] { source.load("d"); });
  EXPECT_TRUE(Contains(msg, "\"d\""));
  EXPECT_TRUE(Contains(msg, index.string()));
}

TEST(ShardedTensors, ShardNameWithParentDirIsRejected) {
  const fs::path dir = test::scratch_dir();
  write_two_shards(dir);
  const fs::path index = dir / "model.safetensors.index.json";
  write_file(index, R"({"weight_map": {"a": "model-00001-of-00002.safetensors",
                                       "c": "../model-00002-of-00002.safetensors"}})");
  const std::string msg = error_of([&] { ShardedTensors s(index.string(), open_safetensors); });
  EXPECT_TRUE(Contains(msg, index.string()));
  EXPECT_TRUE(Contains(msg, "\"../model-00002-of-00002.safetensors\""));
  EXPECT_TRUE(Contains(msg, "not a plain file name"));
}

TEST(ShardedTensors, IndexNamingTensorMissingFromShard) {
  const fs::path dir = test::scratch_dir();
  write_two_shards(dir);
  const fs::path index = dir / "model.safetensors.index.json";
  write_file(index, R"({"weight_map": {"a": "model-00001-of-00002.safetensors",
                                       "c": "model-00001-of-00002.safetensors"}})");
  const std::string msg = error_of([&] { ShardedTensors s(index.string(), open_safetensors); });
  EXPECT_TRUE(Contains(msg, "tensor \"c\""));
  EXPECT_TRUE(Contains(msg, "model-00001-of-00002.safetensors, which has no tensor"));
}

TEST(ShardedTensors, IndexWithoutWeightMapOrMissingShard) {
  const fs::path dir = test::scratch_dir();
  const fs::path index = dir / "model.safetensors.index.json";
  write_file(index, R"({"metadata": {}})");
  EXPECT_TRUE(Contains(error_of([&] { ShardedTensors s(index.string(), open_safetensors); }),
                       "missing object \"weight_map\""));
  write_file(index, R"({"weight_map": {"a": "absent.safetensors"}})");
  EXPECT_TRUE(Contains(error_of([&] { ShardedTensors s(index.string(), open_safetensors); }),
                       "absent.safetensors: cannot open"));
}

TEST(ShardedTensors, EachShardIsOpenedOnceWithTheOpenerAndListedInOrderOfFirstMention) {
  const fs::path dir = test::scratch_dir();
  write_two_shards(dir);
  const fs::path index = dir / "pytorch_model.bin.index.json";
  write_file(index, R"({"weight_map": {"c": "model-00002-of-00002.safetensors",
                                       "a": "model-00001-of-00002.safetensors",
                                       "b": "model-00001-of-00002.safetensors"}})");
  std::map<std::string, int> opened;
  ShardedTensors source(index.string(), [&](const std::string& path) {
    ++opened[fs::path(path).filename().string()];
    return open_safetensors(path);
  });
  EXPECT_EQ(opened, (std::map<std::string, int>{{"model-00001-of-00002.safetensors", 1},
                                                {"model-00002-of-00002.safetensors", 1}}));
  EXPECT_EQ(source.shard_paths(), (std::vector<std::string>{(dir / "model-00002-of-00002.safetensors").string(),
                                                             (dir / "model-00001-of-00002.safetensors").string()}));
  // The opener's own errors pass through unchanged.
  write_file(index, R"({"weight_map": {"a": "model-00001-of-00002.safetensors"}})");
  const std::string msg = error_of([&] {
    ShardedTensors s(index.string(), [](const std::string& path) -> std::unique_ptr<TensorSource> {
      throw Error(path + ": not a zip archive");
    });
  });
  EXPECT_EQ(msg, (dir / "model-00001-of-00002.safetensors").string() + ": not a zip archive");
}

}  // namespace
}  // namespace poslens
