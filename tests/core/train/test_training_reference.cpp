// The trainer's gradients against the PyTorch reference (tools/poslens_reference.py through
// tools/reference_gradients.py): the same weights, the same batch, the same next-token loss;
// every parameter's gradient must agree. Needs Debian's python3-torch (/usr/bin/python3).
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <cstdlib>

#include "core/formats/safetensors.h"
#include "core/models/poslens_model.h"
#include "core/runtime/transformer.h"
#include "core/train/trainer.h"
#include "fixtures.h"

namespace poslens::train {
namespace {

const char* kPython = "/usr/bin/python3";

struct Case {
  const char* name;
  const char* position_encoding;
};

class TrainingReference : public ::testing::TestWithParam<Case> {};

TEST_P(TrainingReference, GradientsMatchPyTorch) {
  if (std::system((std::string(kPython) + " -c 'import torch' > /dev/null 2>&1").c_str()) != 0)
    POSLENS_MISSING_PREREQUISITE(kPython << " cannot import torch (install python3-torch: scripts/setup.sh)");
  const auto dir = test::scratch_dir();
  const auto config = poslens_config_from_text(
      std::string(R"({"model_type": "poslens", "d_model": 16, "n_layers": 2, "n_heads": 2, "d_mlp": 32, "vocab_size": 7, "n_ctx": 12, "position_encoding": )") +
          GetParam().position_encoding + "}",
      "test");
  // PyTorch-default initialisation: sizeable weights, so every term matters in the gradient.
  const auto weights = initialize_weights(config, 5, BlockInit::PyTorch);
  write_poslens_model((dir / "model").string(), config, weights);
  torch::manual_seed(3);
  const auto tokens = torch::randint(0, 7, {3, 12}, torch::kLong);
  write_safetensors((dir / "tokens.safetensors").string(), {{"tokens", tokens}}, {});
  const std::string command = std::string(kPython) + " " + POSLENS_SOURCE_DIR +
                              "/tools/reference_gradients.py " + (dir / "model").string() + " " +
                              (dir / "tokens.safetensors").string() + " " +
                              (dir / "grads.safetensors").string();
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  SafetensorsFile reference((dir / "grads.safetensors").string());

  const Transformer model(config, weights);
  std::vector<at::Tensor> parameters;
  const auto named = named_parameters(config, model.weights());
  for (const auto& [name, t] : named) parameters.push_back(t.requires_grad_(true));
  torch::optim::SGD optimizer(parameters, torch::optim::SGDOptions(0.0));  // lr 0: grads only
  const auto step = training_step(model, optimizer, parameters, tokens, torch::ones({3, 11}), 0.0);
  EXPECT_NEAR(step.loss, reference.load("loss").item<double>(), 1e-5);

  for (const auto& [name, t] : named) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(t.grad().defined()) << "no gradient reached " << name;
    const auto theirs = reference.load(name);
    const double scale = std::max(1e-3, theirs.abs().max().item<double>());
    EXPECT_LT((t.grad() - theirs).abs().max().item<double>() / scale, 1e-4)
        << "ours " << t.grad().flatten().slice(0, 0, 4) << " theirs " << theirs.flatten().slice(0, 0, 4);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Encodings, TrainingReference,
    ::testing::Values(Case{"cope", R"([{"type": "cope", "npos_max": 8}])"},
                      Case{"rope", R"([{"type": "rope"}])"},
                      Case{"learned_absolute", R"([{"type": "learned_absolute"}])"},
                      Case{"rope_cope", R"([{"type": "rope"}, {"type": "cope", "npos_max": 8}])"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace poslens::train
