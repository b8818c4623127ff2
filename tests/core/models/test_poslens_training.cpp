// A PosLens-format model as something to train (docs/poslens-format.md, "Training"): fresh
// weights, the same forward under autograd, named_parameters from the weight table, the writer.
// For every position component: the written folder loads to identical logits and a config that
// reads back equal; a few AdamW steps on a fixed batch lower the loss and move every parameter.
#include <torch/torch.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "core/base/error.h"
#include "core/models/architectures.h"
#include "core/models/poslens_model.h"
#include "core/runtime/checkpoint.h"
#include "core/runtime/transformer.h"
#include "fixtures.h"

namespace poslens {
namespace {

using ::testing::HasSubstr;

/// One small model per component type (and the combinations the papers use). Sizes keep every
/// table row in use on kT tokens (T5 buckets, Shaw distances, CoPE positions, learned rows), so
/// every parameter gets a gradient.
struct Case {
  const char* name;
  const char* position_encoding;  ///< JSON list
  const char* block = "";         ///< extra block keys
};

const Case kCases[] = {
    {"nope", "[]"},
    {"learned_absolute", R"([{"type": "learned_absolute"}])", R"("tie_word_embeddings": true, )"},
    {"sinusoidal", R"([{"type": "sinusoidal"}])"},
    {"heinsen", R"([{"type": "heinsen", "d_pe": 4}])"},
    {"rope", R"([{"type": "rope", "pairing": "interleaved", "rope_theta": 100}])"},
    {"rope_yarn", R"([{"type": "rope", "rotary_dim": 2, "rope_scaling": {"rope_type": "yarn", "factor": 2}}])"},
    {"hope", R"([{"type": "hope", "rope_theta": 100}])"},
    {"alibi", R"([{"type": "alibi"}])"},
    {"shaw", R"([{"type": "shaw", "max_distance": 3, "values": true}])"},
    {"t5", R"([{"type": "t5", "num_buckets": 4, "max_distance": 8, "shared": false}])"},
    {"transformer_xl", R"([{"type": "transformer_xl"}])"},
    {"kerple", R"([{"type": "kerple", "variant": "log"}])"},
    {"fire", R"([{"type": "fire", "hidden": 4}])"},
    {"cope_rope", R"([{"type": "rope"}, {"type": "cope", "npos_max": 4}])"},
    {"cope_sep_keys_alibi", R"([{"type": "cope", "npos_max": 4, "gates": "sep_keys", "position": "alibi", "shared": true}])"},
    {"layernorm_gelu_bias", R"([{"type": "t5", "num_buckets": 4, "max_distance": 8}])",
     R"("norm": "layernorm", "mlp": "plain", "activation": "gelu", "qkv_bias": true, "attn_out_bias": true, "mlp_bias": true, "n_kv_heads": 1, )"},
};

/// gtest names a failing case by this instead of its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

constexpr int64_t kT = 8;

std::string config_text(const Case& c) {
  return std::string(R"({"model_type": "poslens", "d_model": 8, "n_layers": 2, "n_heads": 2, "d_mlp": 16, "vocab_size": 12, "n_ctx": 8, )") +
         c.block + R"("position_encoding": )" + c.position_encoding + "}";
}

ModelConfig read_config(const std::string& text) {
  const auto path = test::scratch_dir() / "config.json";
  std::ofstream(path) << text;
  return read_hf_config(path.string());
}

at::Tensor batch() {
  torch::manual_seed(11);
  return torch::randint(0, 12, {4, kT}, torch::kLong);
}

at::Tensor next_token_loss(const Transformer& model, const at::Tensor& tokens) {
  const auto logits = model.forward(tokens);
  return torch::nn::functional::cross_entropy(
      logits.slice(1, 0, kT - 1).reshape({-1, logits.size(-1)}),
      tokens.slice(1, 1, kT).reshape({-1}));
}

class EveryComponent : public ::testing::TestWithParam<Case> {};

TEST_P(EveryComponent, ConfigJsonReadsBackEqual) {
  const auto config = read_config(config_text(GetParam()));
  const auto again = read_config(poslens_config_json(config, 2));
  EXPECT_EQ(again.to_json(), config.to_json());
  EXPECT_THAT(config.to_json(), HasSubstr(R"("model_type":"poslens")"));
}

TEST_P(EveryComponent, WrittenModelLoadsToIdenticalLogits) {
  const auto config = read_config(config_text(GetParam()));
  const Transformer fresh(config, initialize_weights(config, 5));
  const auto dir = test::scratch_dir() / "saved";
  write_poslens_model(dir.string(), fresh.config(), fresh.weights());
  const auto loaded = load_checkpoint(dir.string(), {"cpu", "float32", ""});
  const auto tokens = batch();
  EXPECT_TRUE(torch::equal(loaded.model->forward(tokens), fresh.forward(tokens)));
  EXPECT_EQ(loaded.model->config().to_json(), config.to_json());
}

TEST_P(EveryComponent, AdamStepsLowerTheLossAndMoveEveryParameter) {
  const auto config = read_config(config_text(GetParam()));
  auto weights = initialize_weights(config, 7);
  const auto params = named_parameters(config, weights);
  std::vector<at::Tensor> leaves, before;
  for (const auto& [name, t] : params) {
    t.requires_grad_(true);
    leaves.push_back(t);
    before.push_back(t.detach().clone());
  }
  const Transformer model(config, weights);  // shares the tensors: trains them in place
  torch::optim::AdamW opt(leaves, torch::optim::AdamWOptions(1e-2).weight_decay(0.0));
  const auto tokens = batch();
  const double first = next_token_loss(model, tokens).item<double>();
  double last = first;
  for (int step = 0; step < 8; ++step) {
    opt.zero_grad();
    auto loss = next_token_loss(model, tokens);
    loss.backward();
    opt.step();
    last = loss.item<double>();
  }
  EXPECT_LT(last, first - 0.05) << GetParam().name;
  for (size_t i = 0; i < params.size(); ++i)
    EXPECT_FALSE(torch::equal(params[i].second.detach(), before[i]))
        << params[i].first << " did not change (no gradient reaches it)";
}

INSTANTIATE_TEST_SUITE_P(PosLensTraining, EveryComponent, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(PosLensTraining, SameSeedSameWeightsOtherSeedOtherWeights) {
  const auto config = read_config(config_text(kCases[13]));
  const auto a = named_parameters(config, initialize_weights(config, 1));
  const auto b = named_parameters(config, initialize_weights(config, 1));
  const auto c = named_parameters(config, initialize_weights(config, 2));
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_TRUE(torch::equal(a[i].second, b[i].second)) << a[i].first;
  }
  EXPECT_FALSE(torch::equal(a[0].second, c[0].second));
}

// weights_on onto the same device gives the model weights of its own (the trainer steps them in
// place): equal values, no memory shared with the weights it was given.
TEST(PosLensTraining, WeightsOnTheSameDeviceAreACopy) {
  const auto config = read_config(config_text(kCases[13]));
  const auto weights = initialize_weights(config, 1);
  const auto original = named_parameters(config, weights);
  const auto moved = named_parameters(config, weights_on(config, weights, c10::kCPU));
  ASSERT_EQ(original.size(), moved.size());
  for (size_t i = 0; i < original.size(); ++i) {
    EXPECT_TRUE(torch::equal(original[i].second, moved[i].second)) << original[i].first;
    EXPECT_NE(original[i].second.data_ptr(), moved[i].second.data_ptr()) << original[i].first;
  }
}

TEST(PosLensTraining, InitialisationFollowsTheReferences) {
  const auto config = read_config(config_text(kCases[13]));  // RoPE + CoPE
  const auto weights = initialize_weights(config, 3);
  for (const auto& [name, t] : named_parameters(config, weights)) {
    if (name.find("cope_pos_emb") != std::string::npos) {
      EXPECT_EQ(t.abs().max().item<float>(), 0.0f) << name << ": CoPE's reference starts at zero";
    }
    if (name.find("norm.weight") != std::string::npos) {
      EXPECT_TRUE(torch::equal(t, torch::ones_like(t))) << name;
    }
  }
  const auto fire = read_config(config_text(kCases[12]));
  for (const auto& [name, t] : named_parameters(fire, initialize_weights(fire, 3))) {
    if (name.find("fire_c") != std::string::npos) {
      EXPECT_FLOAT_EQ(t.item<float>(), 0.1f);
    }
    if (name.find("fire_l_thr") != std::string::npos) {
      EXPECT_FLOAT_EQ(t.item<float>(), 512.0f);
    }
  }
}

TEST(Gpu, PosLensTrainingStepOnCudaMatchesCpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device in this LibTorch build";
  const auto config = read_config(config_text(kCases[13]));  // RoPE + CoPE
  std::vector<double> losses;
  std::vector<at::Tensor> first_param_after;
  for (const auto device : {torch::Device(torch::kCPU), torch::Device(torch::kCUDA)}) {
    auto weights = initialize_weights(config, 9);
    std::vector<at::Tensor> leaves;
    for (const auto& [name, t] : named_parameters(config, weights)) leaves.push_back(t);
    // Move every tensor (and the PE maps) to the device, then train there.
    auto moved = weights;
    auto to = [&](at::Tensor& t) { if (t.defined()) t = t.to(device).detach().requires_grad_(true); };
    to(moved.tok_embed);
    to(moved.final_norm);
    to(moved.unembed);
    for (auto& l : moved.layers)
      for (auto* t : {&l.attn_norm, &l.w_q, &l.w_k, &l.w_v, &l.w_o, &l.mlp_norm, &l.w_gate, &l.w_up, &l.w_down})
        to(*t);
    for (auto& [n, t] : moved.pe.shared) to(t);
    for (auto& layer : moved.pe.layers)
      for (auto& [n, t] : layer) to(t);
    moved.pe.device = device;
    std::vector<at::Tensor> params;
    for (const auto& [name, t] : named_parameters(config, moved)) params.push_back(t);
    const Transformer model(config, moved);
    torch::optim::AdamW opt(params, torch::optim::AdamWOptions(1e-2).weight_decay(0.0));
    auto loss = next_token_loss(model, batch().to(device));
    loss.backward();
    opt.step();
    losses.push_back(loss.item<double>());
    first_param_after.push_back(params.front().detach().cpu());
  }
  EXPECT_NEAR(losses[0], losses[1], 1e-4);
  EXPECT_TRUE(torch::allclose(first_param_after[0], first_param_after[1], 1e-4, 1e-5));
}

TEST(PosLensTraining, TiedUnembeddingIsOneParameter) {
  const auto config = read_config(config_text(kCases[1]));
  const auto params = named_parameters(config, initialize_weights(config, 1));
  int embeddings = 0;
  for (const auto& [name, t] : params) {
    EXPECT_NE(name, "lm_head.weight");
    embeddings += name == "tok_embed.weight";
  }
  EXPECT_EQ(embeddings, 1);
}

TEST(PosLensTraining, OtherFormatsAreRefusedByName) {
  const auto stories = test::stories_dir() / "stories260K.bin";
  if (!std::filesystem::exists(stories)) POSLENS_MISSING_PREREQUISITE("no fixture " << stories);
  const auto m = load_checkpoint(stories.string());
  EXPECT_THAT(test::error_of([&] { named_parameters(m.model->config(), m.model->weights()); }),
              HasSubstr("needs a PosLens-format model"));
  EXPECT_THAT(test::error_of([&] {
                write_poslens_model((test::scratch_dir() / "x").string(), m.model->config(),
                                    m.model->weights());
              }),
              HasSubstr("not llama2.c"));
}

TEST(PosLensTraining, WriterRefusesAnExistingFolderAndLeavesItAlone) {
  const auto config = read_config(config_text(kCases[7]));
  const auto weights = initialize_weights(config, 1);
  const auto dir = test::scratch_dir() / "exists";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "keep.txt") << "mine";
  EXPECT_THAT(test::error_of([&] { write_poslens_model(dir.string(), config, weights); }),
              HasSubstr("already exists"));
  EXPECT_TRUE(std::filesystem::exists(dir / "keep.txt"));
  EXPECT_FALSE(std::filesystem::exists(dir / "config.json"));
}

TEST(PosLensTraining, PyTorchBlockInitialisationIsTorchNnDefaults) {
  const auto config = read_config(
      R"({"model_type": "poslens", "d_model": 64, "n_layers": 1, "n_heads": 4, "d_mlp": 144, "vocab_size": 300, "n_ctx": 8, "mlp_bias": true})");
  const auto w = initialize_weights(config, 1, BlockInit::PyTorch);
  // nn.Embedding: N(0, 1); nn.Linear: U(±1/sqrt(fan_in)), std bound/sqrt(3); norms 1.
  EXPECT_NEAR(w.tok_embed.std().item<double>(), 1.0, 0.02);
  const auto& l = w.layers[0];
  EXPECT_LE(l.w_q.abs().max().item<double>(), 1.0 / 8);
  EXPECT_NEAR(l.w_q.std().item<double>(), 1.0 / 8 / std::sqrt(3.0), 0.003);
  EXPECT_LE(l.w_down.abs().max().item<double>(), 1.0 / 12);
  EXPECT_LE(l.b_down.abs().max().item<double>(), 1.0 / 12) << "a bias uses its weight's fan_in";
  EXPECT_GT(l.b_down.abs().max().item<double>(), 1.0 / 12 * 0.5);
  EXPECT_LE(w.unembed.abs().max().item<double>(), 1.0 / 8);
  EXPECT_TRUE(l.attn_norm.eq(1).all().item<bool>());
  EXPECT_EQ(to_string(parse_block_init("pytorch")), std::string("pytorch"));
  EXPECT_THAT(test::error_of([] { parse_block_init("xavier"); }),
              HasSubstr("unknown initialisation \"xavier\" (choose pytorch or gpt2)"));
}

}  // namespace
}  // namespace poslens
