// Checkpoints stored as PyTorch zip state_dicts (torch.save) load like their safetensors twins:
// an HF folder with pytorch_model.bin, and a .pt file given directly with config.json beside
// it. The .bin is written by Debian's python3-torch from the safetensors of stories260K
// converted to HF, so both hold the same real weights.
#include <torch/torch.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/runtime/checkpoint.h"
#include "core/models/hf_writer.h"
#include "fixtures.h"

namespace poslens {
namespace {

namespace fs = std::filesystem;

/// Writes `state_dict` (OrderedDict of the safetensors file's tensors) with torch.save.
bool torch_save_copy(const fs::path& safetensors, const fs::path& out) {
  const std::string command =
      "/usr/bin/python3 -c \"import sys, torch; sys.path.insert(0, '" + std::string(POSLENS_SOURCE_DIR) +
      "/tools'); import poslens_reference as r; torch.save(r.load_safetensors('" +
      safetensors.string() + "')[0], '" + out.string() + "')\" > /dev/null 2>&1";
  return std::system(command.c_str()) == 0;
}

TEST(PytorchCheckpoints, HfPytorchModelBinAndPtFileMatchSafetensors) {
  POSLENS_REQUIRE_STORIES();
  if (std::system("/usr/bin/python3 -c 'import torch' > /dev/null 2>&1") != 0)
    POSLENS_MISSING_PREREQUISITE("/usr/bin/python3 cannot import torch (install python3-torch)");
  const auto dir = test::scratch_dir();
  const auto stories = load_checkpoint((test::stories_dir() / "stories260K.bin").string());
  write_hf_llama((dir / "hf").string(), stories.model->config(), stories.model->weights());
  fs::create_directories(dir / "bin");
  fs::copy_file(dir / "hf" / "config.json", dir / "bin" / "config.json");
  ASSERT_TRUE(torch_save_copy(dir / "hf" / "model.safetensors", dir / "bin" / "pytorch_model.bin"));

  const auto tokens = torch::tensor({{1, 403, 407, 261, 378}}, torch::kLong);
  const auto expected = load_checkpoint((dir / "hf").string()).model->forward(tokens);
  const auto from_bin = load_checkpoint((dir / "bin").string());
  EXPECT_EQ(from_bin.format, "huggingface (PyTorch zip pytorch_model.bin)");
  EXPECT_TRUE(torch::equal(from_bin.model->forward(tokens), expected));

  fs::rename(dir / "bin" / "pytorch_model.bin", dir / "bin" / "weights.pt");
  const auto from_pt = load_checkpoint((dir / "bin" / "weights.pt").string());
  EXPECT_EQ(from_pt.format, "huggingface (PyTorch zip)");
  EXPECT_TRUE(torch::equal(from_pt.model->forward(tokens), expected));
}

}  // namespace
}  // namespace poslens
