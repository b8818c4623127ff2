// Broken, unknown and hostile checkpoints: one clear error naming what and where.
#include <torch/torch.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "core/runtime/checkpoint.h"
#include "core/base/error.h"
#include "core/formats/safetensors.h"
#include "fixtures.h"

namespace poslens {
namespace {

using ::testing::HasSubstr;

std::string error_of(const std::string& path) {
  try {
    load_checkpoint(path, {"cpu", "float32", ""});
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

const char* kTinyLlama = R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 8,
  "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 12, "vocab_size": 10,
  "tie_word_embeddings": true})";

std::vector<std::pair<std::string, at::Tensor>> tiny_llama_tensors() {
  const std::string p = "model.layers.0.";
  return {{"model.embed_tokens.weight", torch::randn({10, 8})},
          {p + "input_layernorm.weight", torch::ones({8})},
          {p + "self_attn.q_proj.weight", torch::randn({8, 8})},
          {p + "self_attn.k_proj.weight", torch::randn({8, 8})},
          {p + "self_attn.v_proj.weight", torch::randn({8, 8})},
          {p + "self_attn.o_proj.weight", torch::randn({8, 8})},
          {p + "post_attention_layernorm.weight", torch::ones({8})},
          {p + "mlp.gate_proj.weight", torch::randn({12, 8})},
          {p + "mlp.up_proj.weight", torch::randn({12, 8})},
          {p + "mlp.down_proj.weight", torch::randn({8, 12})},
          {"model.norm.weight", torch::ones({8})}};
}

std::filesystem::path folder(const std::string& config,
                             const std::vector<std::pair<std::string, at::Tensor>>& tensors) {
  const auto dir = test::scratch_dir() / "model";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << config;
  write_safetensors((dir / "model.safetensors").string(), tensors);
  return dir;
}

TEST(CheckpointErrors, ValidTinyLlamaLoads) {
  const auto dir = folder(kTinyLlama, tiny_llama_tensors());
  const auto model = load_checkpoint(dir.string(), {"cpu", "float32", ""});
  EXPECT_EQ(model.model->config().n_kv_heads, 2);
  EXPECT_EQ(model.stored_dtype, "F32");
  EXPECT_EQ(model.n_params, 10 * 8 + 8 + 4 * 64 + 8 + 3 * 96 + 8);
}

TEST(CheckpointErrors, MissingPath) {
  EXPECT_THAT(error_of("/nonexistent/model.bin"), HasSubstr("no such file"));
}

TEST(CheckpointErrors, FolderWithoutConfig) {
  const auto dir = test::scratch_dir();
  EXPECT_THAT(error_of(dir.string()), HasSubstr("no config.json"));
}

TEST(CheckpointErrors, UnknownArchitectureNamesItAndTheSupportedOnes) {
  const auto dir = folder(R"({"architectures": ["XLNetLMHeadModel"]})", tiny_llama_tensors());
  const auto msg = error_of(dir.string());
  EXPECT_THAT(msg, HasSubstr("unsupported architecture \"XLNetLMHeadModel\""));
  EXPECT_THAT(msg, HasSubstr("LlamaForCausalLM"));
  EXPECT_THAT(msg, HasSubstr("BertForMaskedLM"));
  EXPECT_THAT(msg, HasSubstr("BloomForCausalLM"));
}

TEST(CheckpointErrors, ConfigMissingKeyOrInvalidJson) {
  auto dir = folder(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 8})", tiny_llama_tensors());
  EXPECT_THAT(error_of(dir.string()), HasSubstr("missing \"num_hidden_layers\""));
  dir = folder("{not json", tiny_llama_tensors());
  EXPECT_THAT(error_of(dir.string()), HasSubstr("not valid UTF-8 JSON"));
  dir = folder(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 8, "num_hidden_layers": 1,
    "num_attention_heads": 3, "num_key_value_heads": 2, "intermediate_size": 12, "vocab_size": 10})",
               tiny_llama_tensors());
  EXPECT_THAT(error_of(dir.string()), HasSubstr("not a multiple of n_kv_heads"));
}

std::string with_rope_scaling(const std::string& scaling) {
  std::string config = kTinyLlama;
  config.insert(config.size() - 1, R"(, "rope_scaling": )" + scaling);
  return config;
}

TEST(CheckpointErrors, RopeScalingIsReadAndBadOnesAreNamed) {
  const auto yarn = load_checkpoint(
      folder(with_rope_scaling(R"({"rope_type": "yarn", "factor": 4.0})"), tiny_llama_tensors())
          .string(),
      {"cpu", "float32", ""});
  EXPECT_GT(yarn.model->position_encoding().rotary_info()->attention_factor, 1.0);  // yarn mscale
  EXPECT_THAT(yarn.model->position_encoding().describe(), HasSubstr("rope_scaling=yarn x4"));
  EXPECT_THAT(error_of(folder(with_rope_scaling(R"({"rope_type": "weird", "factor": 2})"),
                              tiny_llama_tensors()).string()),
              HasSubstr("weird"));
  EXPECT_THAT(error_of(folder(with_rope_scaling(R"({"rope_type": "llama3", "factor": 8})"),
                              tiny_llama_tensors()).string()),
              HasSubstr("rope_scaling"));  // llama3 needs original_max_position_embeddings
}

TEST(CheckpointErrors, MissingTensorIsNamed) {
  auto tensors = tiny_llama_tensors();
  tensors.erase(tensors.begin() + 8);  // mlp.up_proj
  const auto msg = error_of(folder(kTinyLlama, tensors).string());
  EXPECT_THAT(msg, HasSubstr("missing tensor model.layers.0.mlp.up_proj.weight"));
  EXPECT_THAT(msg, HasSubstr("model.safetensors"));
}

TEST(CheckpointErrors, HugeLayerCountFailsOnTheFileNotOnMemory) {
  std::string config = kTinyLlama;
  config.replace(config.find("\"num_hidden_layers\": 1"), 22, "\"num_hidden_layers\": 1000000000");
  const auto msg = error_of(folder(config, tiny_llama_tensors()).string());
  EXPECT_THAT(msg, HasSubstr("missing tensor model.layers.999999999."));
  EXPECT_THAT(msg, HasSubstr("the config says 1000000000 layers"));
}

TEST(CheckpointErrors, WrongShapeIsNamedWithBothShapes) {
  auto tensors = tiny_llama_tensors();
  tensors[2].second = torch::randn({8, 4});
  EXPECT_THAT(error_of(folder(kTinyLlama, tensors).string()),
              HasSubstr("expected [8, 8], got [8, 4] for model.layers.0.self_attn.q_proj.weight"));
}

TEST(CheckpointErrors, UnexpectedTensorsAreListed) {
  auto tensors = tiny_llama_tensors();
  tensors.emplace_back("model.layers.1.self_attn.q_proj.weight", torch::randn({8, 8}));
  EXPECT_THAT(error_of(folder(kTinyLlama, tensors).string()),
              HasSubstr("unexpected tensors in"));
}

TEST(CheckpointErrors, UntiedModelNeedsLmHead) {
  std::string config = kTinyLlama;
  config.replace(config.find("true"), 4, "false");
  EXPECT_THAT(error_of(folder(config, tiny_llama_tensors()).string()),
              HasSubstr("missing tensor lm_head.weight"));
}

TEST(CheckpointErrors, HalfPrecisionTensorsLoad) {
  auto tensors = tiny_llama_tensors();
  for (auto& [name, t] : tensors) t = t.to(torch::kBFloat16);
  tensors[1].second = tensors[1].second.to(torch::kHalf);
  const auto model = load_checkpoint(folder(kTinyLlama, tensors).string(), {"cpu", "float32", ""});
  EXPECT_EQ(model.stored_dtype, "BF16+F16");
  EXPECT_EQ(model.model->dtype(), torch::kFloat32);
}

TEST(CheckpointErrors, SafetensorsFileNeedsConfigBeside) {
  const auto dir = test::scratch_dir();
  write_safetensors((dir / "x.safetensors").string(), tiny_llama_tensors());
  EXPECT_THAT(error_of((dir / "x.safetensors").string()), HasSubstr("needs config.json beside it"));
}

TEST(CheckpointErrors, TorchZipFileIsRecognised) {
  const auto path = test::scratch_dir() / "pytorch_model.pt";
  std::ofstream(path) << "PK\x03\x04 not really a zip";
  EXPECT_THAT(error_of(path.string()), HasSubstr("PyTorch zip"));
}

TEST(CheckpointErrors, GarbageBinIsRejectedByTheLlama2cReader) {
  const auto path = test::scratch_dir() / "garbage.bin";
  std::ofstream(path) << std::string(100, '\xff');
  EXPECT_THAT(error_of(path.string()), HasSubstr("garbage.bin"));
}

TEST(CheckpointErrors, UnknownDeviceAndDtype) {
  EXPECT_THROW(parse_device("tpu"), Error);
  EXPECT_THROW(parse_dtype("int8"), Error);
  EXPECT_EQ(parse_dtype("bf16"), torch::kBFloat16);
  EXPECT_EQ(parse_device("cpu"), c10::Device(c10::kCPU));
  if (!torch::cuda::is_available()) {
    EXPECT_EQ(parse_device("auto"), c10::Device(c10::kCPU));
    EXPECT_THROW(parse_device("cuda"), Error);
  }
}

TEST(CheckpointErrors, BadTokensAreRejectedBeforeRunning) {
  const auto model = load_checkpoint(folder(kTinyLlama, tiny_llama_tensors()).string(),
                                     {"cpu", "float32", ""});
  EXPECT_THROW(model.model->forward(torch::tensor({{1, 10}}, torch::kLong)), Error);
  EXPECT_THROW(model.model->forward(torch::tensor({{-1}}, torch::kLong)), Error);
  EXPECT_THROW(model.model->forward(torch::zeros({1, 0}, torch::kLong)), Error);
  EXPECT_THROW(model.model->forward(torch::zeros({3}, torch::kLong)), Error);
  EXPECT_THROW(model.model->forward(torch::zeros({1, 2}, torch::kFloat)), Error);
}

}  // namespace
}  // namespace poslens
