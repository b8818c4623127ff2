#pragma once
// What the architecture parity tests share (test_arch_reference.cpp: the families of 2019–23,
// T5, the CUDA suite; test_arch_reference_recent.cpp: those of 2024–26): the reference folders
// of tests/data/models/ (README there), their expected values, and the parity check.
#include <torch/torch.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/formats/safetensors.h"
#include "core/runtime/checkpoint.h"
#include "core/runtime/transformer.h"
#include "fixtures.h"

namespace poslens::test {

namespace fs = std::filesystem;

inline fs::path case_dir(const std::string& name) { return fs::path(POSLENS_SOURCE_DIR) / "tests/data/models" / name; }

struct Reference {
  SafetensorsFile file;
  explicit Reference(const std::string& name) : file((case_dir(name) / "reference.safetensors").string()) {}
  at::Tensor operator[](const std::string& name) const { return file.load(name).to(torch::kFloat32); }
  at::Tensor ids(const std::string& name = "input_ids") const { return file.load(name).to(torch::kLong); }
};

/// Loads `path` on `device`, runs the reference's input_ids (and token_type_ids when
/// `token_types`), and compares logits and every layer's pattern; then logits without maps.
inline void expect_parity(const std::string& name, const fs::path& path, bool token_types = false,
                   const std::string& device = "cpu") {
  const Reference ref(name);
  const auto loaded = load_checkpoint(path.string(), {device, "float32", ""});
  const auto& model = *loaded.model;
  Captures captures;
  CaptureSink sink(CaptureSpec({"blocks.*.attn.hook_pattern"}), captures);
  ForwardOptions options;
  if (token_types) options.token_type_ids = ref.ids("token_type_ids");
  c10::InferenceMode guard;
  const auto logits = model.forward(ref.ids(), sink, {}, options).cpu();
  EXPECT_TRUE(torch::allclose(logits, ref["logits"], 0, 1e-4))
      << name << ": logits differ by " << (logits - ref["logits"]).abs().max().item<float>();
  Captures none;
  CaptureSink nothing(CaptureSpec(), none);
  const auto fused = model.forward(ref.ids(), nothing, {}, options).cpu();
  EXPECT_TRUE(torch::allclose(fused, ref["logits"], 0, 1e-4))
      << name << ": logits without maps differ by " << (fused - ref["logits"]).abs().max().item<float>();
  for (int l = 0; l < model.config().n_layers; ++l) {
    const auto pattern = captures.find({HookKind::Pattern, l}).cpu();
    const auto expected = ref["attentions." + std::to_string(l)];
    ASSERT_TRUE(pattern.defined());
    EXPECT_TRUE(torch::allclose(pattern, expected, 0, 1e-5))
        << name << " layer " << l << ": pattern differs by " << (pattern - expected).abs().max().item<float>();
  }
}

/// The poslens::Error loading the checkpoint folder `dir` (float32, CPU) throws.
inline std::string load_error(const fs::path& dir) {
  return error_of([&] { load_checkpoint(dir.string(), {"cpu", "float32", ""}); });
}

/// The `case` folder's config.json edited by `edit`, in a scratch folder with its weights.
inline fs::path case_with(const std::string& name, const std::string& tag, const std::function<void(nlohmann::json&)>& edit) {
  const auto dir = scratch_dir() / (name + "-" + tag);
  fs::create_directories(dir);
  fs::copy_file(case_dir(name) / "model.safetensors", dir / "model.safetensors", fs::copy_options::overwrite_existing);
  std::ifstream in(case_dir(name) / "config.json");
  auto j = nlohmann::json::parse(in);
  edit(j);
  std::ofstream(dir / "config.json") << j.dump();
  return dir;
}

}  // namespace poslens::test
