// Small random checkpoints in the real HF layouts, loaded by PosLens and compared against
// straightforward references written here (GPT-2) or in reference_llama.h (Llama + GQA).
#include <torch/torch.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "core/runtime/checkpoint.h"
#include "core/base/error.h"
#include "core/formats/safetensors.h"
#include "fixtures.h"
#include "reference_llama.h"

namespace poslens {
namespace {

using Tensors = std::vector<std::pair<std::string, at::Tensor>>;

void write_folder(const std::filesystem::path& dir, const std::string& config, const Tensors& t) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << config;
  write_safetensors((dir / "model.safetensors").string(), t);
}

const at::Tensor& get(const Tensors& t, const std::string& name) {
  for (const auto& [n, v] : t)
    if (n == name) return v;
  throw std::runtime_error("test: no tensor " + name);
}

// ---------------------------------------------------------------- GPT-2
constexpr int64_t kD = 16, kHeads = 2, kLayers = 2, kVocab = 50, kCtx = 32;

Tensors random_gpt2(const std::string& prefix) {
  torch::manual_seed(7);
  auto r = [](std::vector<int64_t> shape) { return torch::randn(shape) * 0.2; };
  Tensors t{{prefix + "wte.weight", r({kVocab, kD})}, {prefix + "wpe.weight", r({kCtx, kD})}};
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = prefix + "h." + std::to_string(l) + ".";
    t.insert(t.end(), {{p + "ln_1.weight", 1 + r({kD})}, {p + "ln_1.bias", r({kD})},
                       {p + "attn.c_attn.weight", r({kD, 3 * kD})}, {p + "attn.c_attn.bias", r({3 * kD})},
                       {p + "attn.c_proj.weight", r({kD, kD})}, {p + "attn.c_proj.bias", r({kD})},
                       {p + "ln_2.weight", 1 + r({kD})}, {p + "ln_2.bias", r({kD})},
                       {p + "mlp.c_fc.weight", r({kD, 4 * kD})}, {p + "mlp.c_fc.bias", r({4 * kD})},
                       {p + "mlp.c_proj.weight", r({4 * kD, kD})}, {p + "mlp.c_proj.bias", r({kD})},
                       {p + "attn.bias", torch::ones({1, 1, kCtx, kCtx}).tril()}});
  }
  t.insert(t.end(), {{prefix + "ln_f.weight", 1 + r({kD})}, {prefix + "ln_f.bias", r({kD})}});
  return t;
}

std::string gpt2_config() {
  return R"({"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": 16,
             "n_layer": 2, "n_head": 2, "n_positions": 32, "vocab_size": 50,
             "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new", "n_inner": null})";
}

/// GPT-2 as in the paper/HF modeling_gpt2, directly on the stored Conv1D [in, out] tensors.
at::Tensor reference_gpt2(const Tensors& t, const std::string& prefix, const at::Tensor& ids) {
  auto w = [&](const std::string& n) { return get(t, prefix + n).to(torch::kDouble); };
  auto ln = [](const at::Tensor& x, const at::Tensor& g, const at::Tensor& b) {
    const auto mu = x.mean(-1, true), var = (x - mu).pow(2).mean(-1, true);
    return (x - mu) / torch::sqrt(var + 1e-5) * g + b;
  };
  auto gelu_new = [](const at::Tensor& x) {
    return 0.5 * x * (1 + torch::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x.pow(3))));
  };
  const int64_t T = ids.size(0);
  auto x = w("wte.weight").index_select(0, ids) + w("wpe.weight").narrow(0, 0, T);
  const auto mask = torch::ones({T, T}, torch::kBool).tril();
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "h." + std::to_string(l) + ".";
    const auto h = ln(x, w(p + "ln_1.weight"), w(p + "ln_1.bias"));
    const auto qkv = torch::matmul(h, w(p + "attn.c_attn.weight")) + w(p + "attn.c_attn.bias");
    const auto parts = qkv.split(kD, -1);
    std::vector<at::Tensor> heads;
    for (int64_t hd = 0; hd < kHeads; ++hd) {
      const int64_t dh = kD / kHeads;
      const auto q = parts[0].narrow(1, hd * dh, dh), k = parts[1].narrow(1, hd * dh, dh),
                 v = parts[2].narrow(1, hd * dh, dh);
      auto s = torch::matmul(q, k.t()) / std::sqrt(static_cast<double>(dh));
      s = s.masked_fill(mask.logical_not(), -1e300);
      heads.push_back(torch::matmul(torch::softmax(s, -1), v));
    }
    x = x + torch::matmul(torch::cat(heads, 1), w(p + "attn.c_proj.weight")) + w(p + "attn.c_proj.bias");
    const auto h2 = ln(x, w(p + "ln_2.weight"), w(p + "ln_2.bias"));
    const auto m = gelu_new(torch::matmul(h2, w(p + "mlp.c_fc.weight")) + w(p + "mlp.c_fc.bias"));
    x = x + torch::matmul(m, w(p + "mlp.c_proj.weight")) + w(p + "mlp.c_proj.bias");
  }
  return torch::matmul(ln(x, w("ln_f.weight"), w("ln_f.bias")), w("wte.weight").t());
}

class Gpt2Layout : public ::testing::TestWithParam<std::string> {};

TEST_P(Gpt2Layout, MatchesReference) {
  const std::string prefix = GetParam();
  const auto dir = test::scratch_dir() / "gpt2";
  const auto tensors = random_gpt2(prefix);
  write_folder(dir, gpt2_config(), tensors);

  const auto model = load_checkpoint(dir.string(), {"cpu", "float32", ""});
  ASSERT_EQ(model.model->config().pe_components.size(), 1u);
  EXPECT_EQ(model.model->config().pe_components.front().type, "learned_absolute");
  EXPECT_EQ(model.model->position_encoding().position_table(4).sizes(), (at::IntArrayRef{4, 16}));
  EXPECT_EQ(model.tokenizer, nullptr);
  EXPECT_THAT(model.tokenizer_note, ::testing::HasSubstr("token ids"));
  const auto ids = torch::tensor({3, 17, 42, 0, 9, 9, 31}, torch::kLong);
  Captures captures;
  const auto logits = model.model->forward(ids.unsqueeze(0), CaptureSpec::all(), &captures);
  const auto ref = reference_gpt2(tensors, prefix, ids);
  EXPECT_LT((logits[0].to(torch::kDouble) - ref).abs().max().item<double>(), 1e-4);
  EXPECT_EQ(captures.find({HookKind::PosEmbed, -1}).sizes(), (std::vector<int64_t>{1, 7, kD}));
  EXPECT_FALSE(captures.find({HookKind::RotQ, 0}).defined());
}

INSTANTIATE_TEST_SUITE_P(HubAndTransformerPrefix, Gpt2Layout, ::testing::Values("", "transformer."));

TEST(Gpt2, SequenceLongerThanLearnedPositionsIsAnError) {
  const auto dir = test::scratch_dir() / "gpt2";
  write_folder(dir, gpt2_config(), random_gpt2(""));
  const auto model = load_checkpoint(dir.string(), {"cpu", "float32", ""});
  try {
    model.model->forward(torch::zeros({1, kCtx + 1}, torch::kLong));
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("n_ctx=32"));
  }
}

// ---------------------------------------------------------------- Llama family (HF)
struct FamilyCase {
  std::string architecture;
  bool qkv_bias = false;
  int sliding_window = 0;
  std::string rope_scaling = "null";  // HF config JSON
  double position_scale = 1.0;        // what that scaling means for the reference
};

/// A random HF checkpoint of the Llama family (GQA, half-split RoPE), loaded by PosLens and
/// compared with reference_llama.h on 9 tokens.
double llama_family_max_error(const FamilyCase& fc) {
  torch::manual_seed(3);
  const int64_t d = 32, heads = 4, kv = 2, dh = 8, hidden = 48, vocab = 40, layers = 2;
  auto r = [](std::vector<int64_t> s) { return torch::randn(s) * 0.3; };
  Tensors t{{"model.embed_tokens.weight", r({vocab, d})}, {"model.norm.weight", 1 + r({d})},
            {"lm_head.weight", r({vocab, d})}};
  for (int l = 0; l < layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    t.insert(t.end(), {{p + "input_layernorm.weight", 1 + r({d})},
                       {p + "self_attn.q_proj.weight", r({heads * dh, d})},
                       {p + "self_attn.k_proj.weight", r({kv * dh, d})},
                       {p + "self_attn.v_proj.weight", r({kv * dh, d})},
                       {p + "self_attn.o_proj.weight", r({d, heads * dh})},
                       {p + "post_attention_layernorm.weight", 1 + r({d})},
                       {p + "mlp.gate_proj.weight", r({hidden, d})},
                       {p + "mlp.up_proj.weight", r({hidden, d})},
                       {p + "mlp.down_proj.weight", r({d, hidden})}});
    if (fc.qkv_bias)
      t.insert(t.end(), {{p + "self_attn.q_proj.bias", r({heads * dh})},
                         {p + "self_attn.k_proj.bias", r({kv * dh})},
                         {p + "self_attn.v_proj.bias", r({kv * dh})}});
  }
  const auto dir = test::scratch_dir() / "llama";
  std::string config = R"({"architectures": [")" + fc.architecture + R"("], "hidden_size": 32,
      "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
      "intermediate_size": 48, "vocab_size": 40, "rms_norm_eps": 1e-5, "rope_theta": 500.0,
      "max_position_embeddings": 64, "tie_word_embeddings": false, "bos_token_id": 1,
      "sliding_window": )" + (fc.sliding_window ? std::to_string(fc.sliding_window) : "null") +
      R"(, "rope_scaling": )" + fc.rope_scaling + "}";
  write_folder(dir, config, t);
  const auto model = load_checkpoint(dir.string(), {"cpu", "float32", ""});
  EXPECT_EQ(model.model->config().qkv_bias, fc.qkv_bias);
  EXPECT_EQ(model.model->config().sliding_window, fc.sliding_window);

  test::ReferenceLlama ref;
  ref.dim = d, ref.hidden = hidden, ref.n_layers = layers, ref.n_heads = heads, ref.n_kv_heads = kv;
  ref.vocab = vocab, ref.interleaved = false, ref.theta = 500.0, ref.window = fc.sliding_window;
  ref.position_scale = fc.position_scale;
  auto vec = [&](const std::string& n) {
    const auto c = get(t, n).contiguous();
    return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  };
  ref.embedding = vec("model.embed_tokens.weight");
  ref.rms_final = vec("model.norm.weight");
  ref.classifier = vec("lm_head.weight");
  for (int l = 0; l < layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    ref.rms_att.push_back(vec(p + "input_layernorm.weight"));
    ref.wq.push_back(vec(p + "self_attn.q_proj.weight"));
    ref.wk.push_back(vec(p + "self_attn.k_proj.weight"));
    ref.wv.push_back(vec(p + "self_attn.v_proj.weight"));
    ref.wo.push_back(vec(p + "self_attn.o_proj.weight"));
    ref.rms_ffn.push_back(vec(p + "post_attention_layernorm.weight"));
    ref.w1.push_back(vec(p + "mlp.gate_proj.weight"));
    ref.w3.push_back(vec(p + "mlp.up_proj.weight"));
    ref.w2.push_back(vec(p + "mlp.down_proj.weight"));
    if (fc.qkv_bias) {
      ref.bq.push_back(vec(p + "self_attn.q_proj.bias"));
      ref.bk.push_back(vec(p + "self_attn.k_proj.bias"));
      ref.bv.push_back(vec(p + "self_attn.v_proj.bias"));
    }
  }
  const std::vector<int64_t> ids{1, 5, 9, 39, 0, 12, 12, 7, 30};
  const auto expected = ref.forward(ids);
  const auto logits = model.model->forward(torch::tensor(ids).unsqueeze(0));
  double worst = 0;
  for (size_t p = 0; p < ids.size(); ++p)
    for (int64_t v = 0; v < vocab; ++v)
      worst = std::max(worst, std::abs(logits[0][static_cast<int64_t>(p)][v].item<double>() -
                                       expected[p][static_cast<size_t>(v)]));
  return worst;
}

TEST(HfLlamaFamily, LlamaWithGqaMatchesReference) {
  EXPECT_LT(llama_family_max_error({"LlamaForCausalLM"}), 1e-4);
}

TEST(HfLlamaFamily, Qwen2WithQkvBiasesMatchesReference) {
  EXPECT_LT(llama_family_max_error({"Qwen2ForCausalLM", true}), 1e-4);
}

TEST(HfLlamaFamily, LinearRopeScalingInterpolatesPositions) {
  // Position interpolation: inv_freq / factor is the same rotation as position / factor.
  FamilyCase fc{"LlamaForCausalLM"};
  fc.rope_scaling = R"({"rope_type": "linear", "factor": 4.0})";
  fc.position_scale = 0.25;
  EXPECT_LT(llama_family_max_error(fc), 1e-4);
  fc.position_scale = 1.0;  // and it does differ from unscaled RoPE
  EXPECT_GT(llama_family_max_error(fc), 1e-3);
}

TEST(HfLlamaFamily, MistralSlidingWindowMatchesReference) {
  EXPECT_LT(llama_family_max_error({"MistralForCausalLM", false, 3}), 1e-4);
}

}  // namespace
}  // namespace poslens
