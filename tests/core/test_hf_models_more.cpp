// GPT-NeoX (Pythia), Phi, Gemma and OLMo: small random checkpoints in the real HF layouts,
// loaded by PosLens and compared with references written here from the HF modeling files'
// semantics (modeling_gpt_neox.py, modeling_phi.py, modeling_gemma.py, modeling_olmo.py):
// float64 torch ops on the stored tensors, loops over heads, no code shared with the runtime.
#include <torch/torch.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/checkpoint.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "fixtures.h"

namespace poslens {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;
using Tensors = std::vector<std::pair<std::string, at::Tensor>>;

void write_folder(const std::filesystem::path& dir, const Json& config, const Tensors& t) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << config.dump(2);
  write_safetensors((dir / "model.safetensors").string(), t);
}

/// `config` with `key` set to `value` (null values are written as null, as HF does).
Json with(Json config, const std::string& key, Json value) {
  config[key] = std::move(value);
  return config;
}

Tensors without(Tensors t, const std::string& name) {
  t.erase(std::remove_if(t.begin(), t.end(), [&](const auto& p) { return p.first == name; }),
          t.end());
  return t;
}

/// The error message of loading `dir`, or "" if it loads.
std::string load_error(const std::filesystem::path& dir) {
  try {
    load_checkpoint(dir.string(), {"cpu", "float32", ""});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// ---------------------------------------------------------------- reference pieces (float64)
/// Stored tensors by name, as float64.
struct Weights {
  const Tensors& t;
  at::Tensor operator()(const std::string& name) const {
    for (const auto& [n, v] : t)
      if (n == name) return v.to(torch::kDouble);
    throw std::runtime_error("test: no tensor " + name);
  }
};

at::Tensor affine(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b = {}) {
  auto y = torch::matmul(x, w.t());
  return b.defined() ? y + b : y;
}

at::Tensor layer_norm(const at::Tensor& x, const at::Tensor& g, const at::Tensor& b, double eps) {
  const auto mu = x.mean(-1, true), var = (x - mu).pow(2).mean(-1, true);
  return (x - mu) / torch::sqrt(var + eps) * g + b;
}

at::Tensor gelu_tanh(const at::Tensor& x) {
  return 0.5 * x * (1 + torch::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x.pow(3))));
}

at::Tensor gelu_erf(const at::Tensor& x) { return 0.5 * x * (1 + torch::erf(x / std::sqrt(2.0))); }

/// HF apply_rotary_pos_emb with rotate_half on the first `rot` dims of x [T, heads, d_head]:
/// x_rot * cos + rotate_half(x_rot) * sin, inv_freq_c = theta^(-2c/rot); the rest passes.
at::Tensor rope_rotate_half(const at::Tensor& x, int64_t rot, double theta) {
  const int64_t T = x.size(0), half = rot / 2;
  auto cos = torch::zeros({T, 1, rot}, torch::kDouble);
  auto sin = torch::zeros({T, 1, rot}, torch::kDouble);
  for (int64_t m = 0; m < T; ++m)
    for (int64_t c = 0; c < half; ++c) {
      const double a = double(m) * std::pow(theta, -2.0 * double(c) / double(rot));
      for (int64_t i : {c, c + half}) {  // emb = cat(freqs, freqs)
        cos[m][0][i] = std::cos(a);
        sin[m][0][i] = std::sin(a);
      }
    }
  const auto x_rot = x.narrow(2, 0, rot), x_pass = x.narrow(2, rot, x.size(2) - rot);
  const auto rotated_half = torch::cat({-x_rot.narrow(2, half, half), x_rot.narrow(2, 0, half)}, 2);
  return torch::cat({x_rot * cos + rotated_half * sin, x_pass}, 2);
}

/// Causal softmax attention, q [T, H, dh], k/v [T, Hkv, dh] (query head h reads kv head
/// h / (H/Hkv), HF repeat_kv), scores * 1/sqrt(dh). Returns [T, H*dh].
at::Tensor causal_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  const int64_t T = q.size(0), H = q.size(1), Hkv = k.size(1), dh = q.size(2);
  std::vector<at::Tensor> heads;
  for (int64_t h = 0; h < H; ++h) {
    const int64_t kvh = h / (H / Hkv);
    auto s = torch::matmul(q.select(1, h), k.select(1, kvh).t()) / std::sqrt(double(dh));
    s = s.masked_fill(torch::ones({T, T}, torch::kBool).tril().logical_not(), -1e300);
    heads.push_back(torch::matmul(torch::softmax(s, -1), v.select(1, kvh)));
  }
  return torch::cat(heads, 1);
}

double max_error(const at::Tensor& logits, const at::Tensor& reference) {
  return (logits.to(torch::kDouble) - reference).abs().max().item<double>();
}

auto random_tensor(double scale = 0.3) {
  return [scale](std::vector<int64_t> shape) { return torch::randn(shape) * scale; };
}

const std::vector<int64_t> kIds{1, 5, 9, 39, 0, 12, 12, 7, 30};

// ---------------------------------------------------------------- GPT-NeoX / Pythia
// d_model 32, 2 heads of 16, rotary_pct 0.25 -> 4 rotary dims per head (Pythia's fraction).
constexpr int64_t kNeoxD = 32, kNeoxHeads = 2, kNeoxDh = 16, kNeoxRot = 4, kNeoxMlp = 64,
                  kNeoxVocab = 40, kNeoxLayers = 2;

Tensors random_neox() {
  torch::manual_seed(11);
  auto r = random_tensor();
  const int64_t d = kNeoxD;
  Tensors t{{"gpt_neox.embed_in.weight", r({kNeoxVocab, d})},
            {"gpt_neox.final_layer_norm.weight", 1 + r({d})},
            {"gpt_neox.final_layer_norm.bias", r({d})},
            {"embed_out.weight", r({kNeoxVocab, d})}};
  for (int l = 0; l < kNeoxLayers; ++l) {
    const std::string p = "gpt_neox.layers." + std::to_string(l) + ".";
    t.insert(t.end(),
             {{p + "input_layernorm.weight", 1 + r({d})}, {p + "input_layernorm.bias", r({d})},
              {p + "post_attention_layernorm.weight", 1 + r({d})},
              {p + "post_attention_layernorm.bias", r({d})},
              {p + "attention.query_key_value.weight", r({3 * d, d})},
              {p + "attention.query_key_value.bias", r({3 * d})},
              {p + "attention.dense.weight", r({d, d})}, {p + "attention.dense.bias", r({d})},
              {p + "mlp.dense_h_to_4h.weight", r({kNeoxMlp, d})},
              {p + "mlp.dense_h_to_4h.bias", r({kNeoxMlp})},
              {p + "mlp.dense_4h_to_h.weight", r({d, kNeoxMlp})},
              {p + "mlp.dense_4h_to_h.bias", r({d})},
              // Buffers older transformers versions saved: ignored.
              {p + "attention.bias", torch::ones({1, 1, 64, 64}).tril()},
              {p + "attention.masked_bias", torch::tensor(-1e9)},
              {p + "attention.rotary_emb.inv_freq", torch::ones({kNeoxRot / 2})}});
  }
  return t;
}

Json neox_config(bool parallel_residual) {
  return Json::parse(R"({"architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox",
      "hidden_size": 32, "num_attention_heads": 2, "num_hidden_layers": 2,
      "intermediate_size": 64, "vocab_size": 40, "rotary_pct": 0.25, "rotary_emb_base": 500,
      "max_position_embeddings": 64, "layer_norm_eps": 1e-5, "hidden_act": "gelu",
      "tie_word_embeddings": false, "bos_token_id": 0, "use_parallel_residual": )" +
                     std::string(parallel_residual ? "true" : "false") + "}");
}

/// HF GPTNeoXForCausalLM: qkv viewed per head as [H, 3·dh] and split into q | k | v; RoPE
/// (rotate_half) on the first rotary_ndims of q and k; parallel or sequential residual.
at::Tensor reference_neox(const Tensors& t, bool parallel_residual, const at::Tensor& ids) {
  const Weights w{t};
  const int64_t T = ids.size(0), H = kNeoxHeads, dh = kNeoxDh;
  const double eps = 1e-5;
  auto x = w("gpt_neox.embed_in.weight").index_select(0, ids);
  for (int l = 0; l < kNeoxLayers; ++l) {
    const std::string p = "gpt_neox.layers." + std::to_string(l) + ".";
    auto mlp = [&](const at::Tensor& h) {
      const auto up = affine(h, w(p + "mlp.dense_h_to_4h.weight"), w(p + "mlp.dense_h_to_4h.bias"));
      return affine(gelu_erf(up), w(p + "mlp.dense_4h_to_h.weight"),
                    w(p + "mlp.dense_4h_to_h.bias"));
    };
    const auto h =
        layer_norm(x, w(p + "input_layernorm.weight"), w(p + "input_layernorm.bias"), eps);
    const auto qkv = affine(h, w(p + "attention.query_key_value.weight"),
                            w(p + "attention.query_key_value.bias"))
                         .view({T, H, 3 * dh});
    const auto q = rope_rotate_half(qkv.narrow(2, 0, dh), kNeoxRot, 500.0);
    const auto k = rope_rotate_half(qkv.narrow(2, dh, dh), kNeoxRot, 500.0);
    const auto v = qkv.narrow(2, 2 * dh, dh);
    const auto attn = affine(causal_attention(q, k, v), w(p + "attention.dense.weight"),
                             w(p + "attention.dense.bias"));
    const auto& g2 = w(p + "post_attention_layernorm.weight");
    const auto& b2 = w(p + "post_attention_layernorm.bias");
    if (parallel_residual) {
      x = x + attn + mlp(layer_norm(x, g2, b2, eps));
    } else {
      x = x + attn;
      x = x + mlp(layer_norm(x, g2, b2, eps));
    }
  }
  const auto out = layer_norm(x, w("gpt_neox.final_layer_norm.weight"),
                              w("gpt_neox.final_layer_norm.bias"), eps);
  return affine(out, w("embed_out.weight"));
}

class GptNeoxResidual : public ::testing::TestWithParam<bool> {};

TEST_P(GptNeoxResidual, MatchesReference) {
  const bool parallel = GetParam();
  const auto dir = test::scratch_dir() / "neox";
  const auto tensors = random_neox();
  write_folder(dir, neox_config(parallel), tensors);
  const auto loaded = load_checkpoint(dir.string(), {"cpu", "float32", ""});
  const auto& c = loaded.model->config();
  EXPECT_EQ(c.rotary_dim, kNeoxRot);
  EXPECT_EQ(c.parallel_residual, parallel);
  EXPECT_EQ(c.activation, Activation::GeluExact);
  EXPECT_EQ(c.bos_token_id, -1);

  const auto ids = torch::tensor(kIds, torch::kLong);
  const auto logits = loaded.model->forward(ids.unsqueeze(0));
  EXPECT_LT(max_error(logits[0], reference_neox(tensors, parallel, ids)), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(ParallelAndSequential, GptNeoxResidual, ::testing::Bool());

TEST(GptNeox, QueryKeyValueIsSplitPerHead) {
  // Rows of query_key_value are [head, (q, k, v), d_head]: w_q is rows 0..15 and 48..63.
  const auto dir = test::scratch_dir() / "neox";
  const auto tensors = random_neox();
  write_folder(dir, neox_config(true), tensors);
  const auto loaded = load_checkpoint(dir.string(), {"cpu", "float32", ""});
  const auto& layer = loaded.model->weights().layers[1];
  const auto fused = Weights{tensors}("gpt_neox.layers.1.attention.query_key_value.weight")
                         .to(torch::kFloat32);
  const auto fused_bias = Weights{tensors}("gpt_neox.layers.1.attention.query_key_value.bias")
                              .to(torch::kFloat32);
  const int64_t dh = kNeoxDh;
  for (int part = 0; part < 3; ++part) {
    const auto& w = part == 0 ? layer.w_q : part == 1 ? layer.w_k : layer.w_v;
    const auto& b = part == 0 ? layer.b_q : part == 1 ? layer.b_k : layer.b_v;
    EXPECT_TRUE(torch::equal(w.narrow(0, 0, dh), fused.narrow(0, part * dh, dh))) << part;
    EXPECT_TRUE(torch::equal(w.narrow(0, dh, dh), fused.narrow(0, 3 * dh + part * dh, dh))) << part;
    EXPECT_TRUE(torch::equal(b.narrow(0, dh, dh), fused_bias.narrow(0, 3 * dh + part * dh, dh)))
        << part;
  }
}

TEST(GptNeox, DescribeNamesPartialRotary) {
  const auto dir = test::scratch_dir() / "neox";
  write_folder(dir, neox_config(true), random_neox());
  const auto text = describe(load_checkpoint(dir.string(), {"cpu", "float32", ""}));
  EXPECT_THAT(text, HasSubstr("GPTNeoXForCausalLM"));
  EXPECT_THAT(text, HasSubstr("RoPE (half_split pairs, rope_theta=500, rotary_dim=4 of 16)"));
  EXPECT_THAT(text, HasSubstr("LayerNorm, plain gelu MLP, parallel attention + MLP"));
}

TEST(GptNeox, BadCheckpointsAreClearErrors) {
  const auto dir = test::scratch_dir() / "neox";
  const auto tensors = random_neox();
  write_folder(dir, neox_config(true),
               without(tensors, "gpt_neox.layers.1.attention.query_key_value.weight"));
  EXPECT_THAT(load_error(dir),
              HasSubstr("missing tensor gpt_neox.layers.1.attention.query_key_value.weight"));

  // rotary_pct 0.2 of 16 dims: int(3.2) = 3 rotary dims, odd: refused.
  std::filesystem::remove_all(dir);
  write_folder(dir, with(neox_config(true), "rotary_pct", 0.2), tensors);
  EXPECT_THAT(load_error(dir), HasSubstr("rotary_dim 3 must be even"));

  std::filesystem::remove_all(dir);
  write_folder(dir, with(neox_config(true), "hidden_act", "relu"), tensors);
  EXPECT_THAT(load_error(dir), HasSubstr("hidden_act \"relu\" is not supported"));

  std::filesystem::remove_all(dir);
  auto no_size = neox_config(true);
  no_size.erase("intermediate_size");
  write_folder(dir, no_size, tensors);
  EXPECT_THAT(load_error(dir), HasSubstr("config.json: missing \"intermediate_size\""));

  std::filesystem::remove_all(dir);  // no attention biases when attention_bias is false
  write_folder(dir, with(neox_config(true), "attention_bias", false), tensors);
  EXPECT_THAT(load_error(dir), HasSubstr("unexpected tensors"));
  EXPECT_THAT(load_error(dir), HasSubstr("attention.query_key_value.bias"));
}

// ---------------------------------------------------------------- Phi
// d_model 32, 4 query heads and 2 kv heads of 8, partial_rotary_factor 0.5 -> 4 rotary dims.
constexpr int64_t kPhiD = 32, kPhiHeads = 4, kPhiKv = 2, kPhiDh = 8, kPhiRot = 4, kPhiMlp = 48,
                  kPhiVocab = 40, kPhiLayers = 2;

Tensors random_phi() {
  torch::manual_seed(5);
  auto r = random_tensor();
  const int64_t d = kPhiD, q = kPhiHeads * kPhiDh, kv = kPhiKv * kPhiDh;
  Tensors t{{"model.embed_tokens.weight", r({kPhiVocab, d})},
            {"model.final_layernorm.weight", 1 + r({d})},
            {"model.final_layernorm.bias", r({d})},
            {"lm_head.weight", r({kPhiVocab, d})},
            {"lm_head.bias", r({kPhiVocab})}};
  for (int l = 0; l < kPhiLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    t.insert(t.end(),
             {{p + "input_layernorm.weight", 1 + r({d})}, {p + "input_layernorm.bias", r({d})},
              {p + "self_attn.q_proj.weight", r({q, d})}, {p + "self_attn.q_proj.bias", r({q})},
              {p + "self_attn.k_proj.weight", r({kv, d})}, {p + "self_attn.k_proj.bias", r({kv})},
              {p + "self_attn.v_proj.weight", r({kv, d})}, {p + "self_attn.v_proj.bias", r({kv})},
              {p + "self_attn.dense.weight", r({d, q})}, {p + "self_attn.dense.bias", r({d})},
              {p + "mlp.fc1.weight", r({kPhiMlp, d})}, {p + "mlp.fc1.bias", r({kPhiMlp})},
              {p + "mlp.fc2.weight", r({d, kPhiMlp})}, {p + "mlp.fc2.bias", r({d})}});
  }
  return t;
}

Json phi_config() {
  return Json::parse(R"({"architectures": ["PhiForCausalLM"], "model_type": "phi",
      "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
      "num_key_value_heads": 2, "intermediate_size": 48, "vocab_size": 40,
      "partial_rotary_factor": 0.5, "rope_theta": 1000.0, "hidden_act": "gelu_new",
      "layer_norm_eps": 1e-5, "max_position_embeddings": 64, "qk_layernorm": false,
      "rope_scaling": null, "tie_word_embeddings": false, "bos_token_id": 1})");
}

/// HF PhiForCausalLM: one LayerNorm h = ln(x) feeds attention and MLP,
/// x += dense(attn(h)) + fc2(gelu_new(fc1(h))); partial rotate_half RoPE; biased lm_head.
at::Tensor reference_phi(const Tensors& t, const at::Tensor& ids) {
  const Weights w{t};
  const int64_t T = ids.size(0);
  const double eps = 1e-5, theta = 1000.0;
  auto x = w("model.embed_tokens.weight").index_select(0, ids);
  for (int l = 0; l < kPhiLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const auto h =
        layer_norm(x, w(p + "input_layernorm.weight"), w(p + "input_layernorm.bias"), eps);
    auto proj = [&](const char* name, int64_t heads) {
      const std::string n = p + "self_attn." + name;
      return affine(h, w(n + ".weight"), w(n + ".bias")).view({T, heads, kPhiDh});
    };
    const auto q = rope_rotate_half(proj("q_proj", kPhiHeads), kPhiRot, theta);
    const auto k = rope_rotate_half(proj("k_proj", kPhiKv), kPhiRot, theta);
    const auto attn = affine(causal_attention(q, k, proj("v_proj", kPhiKv)),
                             w(p + "self_attn.dense.weight"), w(p + "self_attn.dense.bias"));
    const auto mlp = affine(gelu_tanh(affine(h, w(p + "mlp.fc1.weight"), w(p + "mlp.fc1.bias"))),
                            w(p + "mlp.fc2.weight"), w(p + "mlp.fc2.bias"));
    x = x + attn + mlp;
  }
  const auto out =
      layer_norm(x, w("model.final_layernorm.weight"), w("model.final_layernorm.bias"), eps);
  return affine(out, w("lm_head.weight"), w("lm_head.bias"));
}

TEST(Phi, WithGqaAndPartialRotaryMatchesReference) {
  const auto dir = test::scratch_dir() / "phi";
  const auto tensors = random_phi();
  write_folder(dir, phi_config(), tensors);
  const auto loaded = load_checkpoint(dir.string(), {"cpu", "float32", ""});
  const auto& c = loaded.model->config();
  EXPECT_EQ(c.n_kv_heads, kPhiKv);
  EXPECT_EQ(c.rotary_dim, kPhiRot);
  EXPECT_TRUE(c.parallel_residual);
  // The one input_layernorm is counted once although it serves both norms.
  int64_t stored = 0;
  for (const auto& [name, tensor] : tensors) stored += tensor.numel();
  EXPECT_EQ(loaded.n_params, stored);

  const auto ids = torch::tensor(kIds, torch::kLong);
  const auto logits = loaded.model->forward(ids.unsqueeze(0));
  EXPECT_LT(max_error(logits[0], reference_phi(tensors, ids)), 1e-4);
}

TEST(Phi, DescribeNamesPartialRotary) {
  const auto dir = test::scratch_dir() / "phi";
  write_folder(dir, phi_config(), random_phi());
  const auto text = describe(load_checkpoint(dir.string(), {"cpu", "float32", ""}));
  EXPECT_THAT(text, HasSubstr("PhiForCausalLM"));
  EXPECT_THAT(text, HasSubstr("RoPE (half_split pairs, rope_theta=1000, rotary_dim=4 of 8)"));
  EXPECT_THAT(text, HasSubstr("LayerNorm, plain gelu_new MLP, parallel attention + MLP"));
}

TEST(Phi, RopeScalingIsRead) {
  const auto dir = test::scratch_dir() / "phi";
  write_folder(dir, with(phi_config(), "rope_scaling", {{"type", "linear"}, {"factor", 2.0}}),
               random_phi());
  const auto text = describe(load_checkpoint(dir.string(), {"cpu", "float32", ""}));
  EXPECT_THAT(text, HasSubstr("rotary_dim=4 of 8, rope_scaling=linear x2"));
}

TEST(Phi, BadCheckpointsAreClearErrors) {
  const auto dir = test::scratch_dir() / "phi";
  const auto tensors = random_phi();
  write_folder(dir, with(phi_config(), "qk_layernorm", true), tensors);
  EXPECT_THAT(load_error(dir), HasSubstr("\"qk_layernorm\": true"));

  std::filesystem::remove_all(dir);
  write_folder(dir, Json::parse(R"({"architectures": ["PhiForCausalLM"],
                   "model_type": "phi-msft", "n_embd": 32, "n_layer": 2, "n_head": 4})"),
               tensors);
  EXPECT_THAT(load_error(dir), HasSubstr("original remote-code layout"));

  std::filesystem::remove_all(dir);
  write_folder(dir, phi_config(), without(tensors, "lm_head.bias"));
  EXPECT_THAT(load_error(dir), HasSubstr("missing tensor lm_head.bias"));

  std::filesystem::remove_all(dir);  // kv heads as many as query heads: k_proj is [16, 32]
  write_folder(dir, with(phi_config(), "num_key_value_heads", 4), tensors);
  EXPECT_THAT(load_error(dir), HasSubstr("expected [32, 32], got [16, 32] for "
                                         "model.layers.0.self_attn.k_proj.weight"));
}

// ---------------------------------------------------------------- Gemma
// d_model 32, 4 query heads and 2 kv heads of head_dim 12 (4·12 = 48 != 32), tied embeddings.
constexpr int64_t kGemmaD = 32, kGemmaHeads = 4, kGemmaKv = 2, kGemmaDh = 12, kGemmaMlp = 48,
                  kGemmaVocab = 40, kGemmaLayers = 2;

Tensors random_gemma() {
  torch::manual_seed(9);
  auto r = random_tensor();
  const int64_t d = kGemmaD, q = kGemmaHeads * kGemmaDh, kv = kGemmaKv * kGemmaDh;
  // Norm weights are stored as w - 1 (HF GemmaRMSNorm multiplies by 1 + w): small values.
  Tensors t{{"model.embed_tokens.weight", r({kGemmaVocab, d})}, {"model.norm.weight", r({d})}};
  for (int l = 0; l < kGemmaLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    t.insert(t.end(), {{p + "input_layernorm.weight", r({d})},
                       {p + "self_attn.q_proj.weight", r({q, d})},
                       {p + "self_attn.k_proj.weight", r({kv, d})},
                       {p + "self_attn.v_proj.weight", r({kv, d})},
                       {p + "self_attn.o_proj.weight", r({d, q})},
                       {p + "post_attention_layernorm.weight", r({d})},
                       {p + "mlp.gate_proj.weight", r({kGemmaMlp, d})},
                       {p + "mlp.up_proj.weight", r({kGemmaMlp, d})},
                       {p + "mlp.down_proj.weight", r({d, kGemmaMlp})}});
  }
  return t;
}

Json gemma_config() {
  return Json::parse(R"({"architectures": ["GemmaForCausalLM"], "model_type": "gemma",
      "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
      "num_key_value_heads": 2, "head_dim": 12, "intermediate_size": 48, "vocab_size": 40,
      "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "max_position_embeddings": 64,
      "hidden_act": "gelu", "hidden_activation": "gelu_pytorch_tanh", "attention_bias": false,
      "tie_word_embeddings": true, "bos_token_id": 2})");
}

/// HF GemmaForCausalLM: embeddings * sqrt(hidden_size); RMSNorm scaled by (1 + w); Llama
/// attention with head_dim from the config and GQA; GeGLU MLP (tanh GELU); tied unembedding.
at::Tensor reference_gemma(const Tensors& t, const at::Tensor& ids) {
  const Weights w{t};
  const int64_t T = ids.size(0);
  const double eps = 1e-6;
  auto rms = [&](const at::Tensor& x, const std::string& name) {
    return x / torch::sqrt(x.pow(2).mean(-1, true) + eps) * (1.0 + w(name));
  };
  auto x = w("model.embed_tokens.weight").index_select(0, ids) * std::sqrt(double(kGemmaD));
  for (int l = 0; l < kGemmaLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const auto h = rms(x, p + "input_layernorm.weight");
    auto proj = [&](const char* name, int64_t heads) {
      return affine(h, w(p + "self_attn." + name + ".weight")).view({T, heads, kGemmaDh});
    };
    const auto q = rope_rotate_half(proj("q_proj", kGemmaHeads), kGemmaDh, 10000.0);
    const auto k = rope_rotate_half(proj("k_proj", kGemmaKv), kGemmaDh, 10000.0);
    const auto z = causal_attention(q, k, proj("v_proj", kGemmaKv));
    x = x + affine(z, w(p + "self_attn.o_proj.weight"));
    const auto h2 = rms(x, p + "post_attention_layernorm.weight");
    const auto gated = gelu_tanh(affine(h2, w(p + "mlp.gate_proj.weight"))) *
                       affine(h2, w(p + "mlp.up_proj.weight"));
    x = x + affine(gated, w(p + "mlp.down_proj.weight"));
  }
  return affine(rms(x, "model.norm.weight"), w("model.embed_tokens.weight"));
}

TEST(Gemma, WithGqaAndWideHeadsMatchesReference) {
  const auto dir = test::scratch_dir() / "gemma";
  const auto tensors = random_gemma();
  write_folder(dir, gemma_config(), tensors);
  const auto loaded = load_checkpoint(dir.string(), {"cpu", "float32", ""});
  const auto& c = loaded.model->config();
  EXPECT_EQ(c.d_head, kGemmaDh);
  EXPECT_EQ(c.activation, Activation::GeluNew);
  EXPECT_DOUBLE_EQ(c.norm_weight_offset, 1.0);
  EXPECT_DOUBLE_EQ(c.embed_scale, std::sqrt(32.0));
  EXPECT_EQ(c.bos_token_id, 2);

  const auto ids = torch::tensor(kIds, torch::kLong);
  const auto logits = loaded.model->forward(ids.unsqueeze(0));
  EXPECT_LT(max_error(logits[0], reference_gemma(tensors, ids)), 1e-4);
}

TEST(Gemma, Bfloat16StaysCloseToReference) {
  // The (1 + w) norm and the embedding scale in bfloat16 (scale rounded to bf16, as HF does).
  const auto dir = test::scratch_dir() / "gemma";
  const auto tensors = random_gemma();
  write_folder(dir, gemma_config(), tensors);
  const auto loaded = load_checkpoint(dir.string(), {"cpu", "bfloat16", ""});
  const auto ids = torch::tensor(kIds, torch::kLong);
  const auto reference = reference_gemma(tensors, ids);
  const double error = max_error(loaded.model->forward(ids.unsqueeze(0))[0], reference);
  EXPECT_LT(error, 0.05 * reference.abs().max().item<double>()) << error;
}

TEST(Gemma, HiddenActivationNullMeansTanhGeluAsInHf) {
  // The first Gemma configs said hidden_act "gelu"; HF GemmaMLP then uses gelu_pytorch_tanh.
  const auto dir = test::scratch_dir() / "gemma";
  write_folder(dir, with(gemma_config(), "hidden_activation", nullptr), random_gemma());
  const auto loaded = load_checkpoint(dir.string(), {"cpu", "float32", ""});
  EXPECT_EQ(loaded.model->config().activation, Activation::GeluNew);
}

TEST(Gemma, DescribeNamesRotary) {
  const auto dir = test::scratch_dir() / "gemma";
  write_folder(dir, gemma_config(), random_gemma());
  const auto text = describe(load_checkpoint(dir.string(), {"cpu", "float32", ""}));
  EXPECT_THAT(text, HasSubstr("GemmaForCausalLM"));
  EXPECT_THAT(text, HasSubstr("RoPE (half_split pairs, rope_theta=10000)"));
  EXPECT_THAT(text, HasSubstr("RMSNorm, gated gelu_new MLP"));
}

TEST(Gemma, BadCheckpointsAreClearErrors) {
  const auto dir = test::scratch_dir() / "gemma";
  const auto tensors = random_gemma();
  write_folder(dir, with(gemma_config(), "architectures", Json::array({"Gemma2ForCausalLM"})),
               tensors);
  auto message = load_error(dir);
  EXPECT_THAT(message, HasSubstr("unsupported architecture \"Gemma2ForCausalLM\""));
  EXPECT_THAT(message, HasSubstr("soft-capping"));
  EXPECT_THAT(message, HasSubstr("GemmaForCausalLM"));
  EXPECT_THAT(message, HasSubstr("GPTNeoXForCausalLM"));

  std::filesystem::remove_all(dir);
  auto no_head_dim = gemma_config();
  no_head_dim.erase("head_dim");
  write_folder(dir, no_head_dim, tensors);
  EXPECT_THAT(load_error(dir), HasSubstr("missing \"head_dim\""));

  std::filesystem::remove_all(dir);  // untied: lm_head.weight is required
  write_folder(dir, with(gemma_config(), "tie_word_embeddings", false), tensors);
  EXPECT_THAT(load_error(dir), HasSubstr("missing tensor lm_head.weight"));
}


// ---------------------------------------------------------------- OLMo
// Llama layout without norm tensors; 4 query heads and 2 kv heads of 8.
constexpr int64_t kOlmoD = 32, kOlmoHeads = 4, kOlmoKv = 2, kOlmoDh = 8, kOlmoMlp = 48,
                  kOlmoVocab = 40, kOlmoLayers = 2;

Tensors random_olmo() {
  torch::manual_seed(13);
  auto r = random_tensor();
  const int64_t d = kOlmoD, q = kOlmoHeads * kOlmoDh, kv = kOlmoKv * kOlmoDh;
  Tensors t{{"model.embed_tokens.weight", r({kOlmoVocab, d})},
            {"lm_head.weight", r({kOlmoVocab, d})}};
  for (int l = 0; l < kOlmoLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    t.insert(t.end(), {{p + "self_attn.q_proj.weight", r({q, d})},
                       {p + "self_attn.k_proj.weight", r({kv, d})},
                       {p + "self_attn.v_proj.weight", r({kv, d})},
                       {p + "self_attn.o_proj.weight", r({d, q})},
                       {p + "mlp.gate_proj.weight", r({kOlmoMlp, d})},
                       {p + "mlp.up_proj.weight", r({kOlmoMlp, d})},
                       {p + "mlp.down_proj.weight", r({d, kOlmoMlp})}});
  }
  return t;
}

Json olmo_config() {
  return Json::parse(R"({"architectures": ["OlmoForCausalLM"], "model_type": "olmo",
      "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
      "num_key_value_heads": 2, "intermediate_size": 48, "vocab_size": 40,
      "hidden_act": "silu", "rope_theta": 10000.0, "max_position_embeddings": 64,
      "attention_bias": false, "clip_qkv": null, "tie_word_embeddings": false,
      "bos_token_id": null})");
}

/// HF OlmoForCausalLM: Llama with OlmoLayerNorm = layer_norm without weight or bias, eps 1e-5.
at::Tensor reference_olmo(const Tensors& t, const at::Tensor& ids) {
  const Weights w{t};
  const int64_t T = ids.size(0);
  auto ln = [](const at::Tensor& x) {
    const auto mu = x.mean(-1, true), var = (x - mu).pow(2).mean(-1, true);
    return (x - mu) / torch::sqrt(var + 1e-5);
  };
  auto x = w("model.embed_tokens.weight").index_select(0, ids);
  for (int l = 0; l < kOlmoLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const auto h = ln(x);
    auto proj = [&](const char* name, int64_t heads) {
      return affine(h, w(p + "self_attn." + name + ".weight")).view({T, heads, kOlmoDh});
    };
    const auto q = rope_rotate_half(proj("q_proj", kOlmoHeads), kOlmoDh, 10000.0);
    const auto k = rope_rotate_half(proj("k_proj", kOlmoKv), kOlmoDh, 10000.0);
    const auto z = causal_attention(q, k, proj("v_proj", kOlmoKv));
    x = x + affine(z, w(p + "self_attn.o_proj.weight"));
    const auto h2 = ln(x);
    const auto gate = affine(h2, w(p + "mlp.gate_proj.weight"));
    x = x + affine(gate * torch::sigmoid(gate) * affine(h2, w(p + "mlp.up_proj.weight")),
                   w(p + "mlp.down_proj.weight"));
  }
  return affine(ln(x), w("lm_head.weight"));
}

TEST(Olmo, NonParametricLayerNormMatchesReference) {
  const auto dir = test::scratch_dir() / "olmo";
  const auto tensors = random_olmo();
  write_folder(dir, olmo_config(), tensors);
  const auto loaded = load_checkpoint(dir.string(), {"cpu", "float32", ""});
  EXPECT_EQ(loaded.model->config().norm, NormType::LayerNorm);
  EXPECT_FALSE(loaded.model->weights().layers[0].attn_norm.defined());
  EXPECT_THAT(describe(loaded), HasSubstr("RoPE (half_split pairs, rope_theta=10000)"));

  const auto ids = torch::tensor(kIds, torch::kLong);
  const auto logits = loaded.model->forward(ids.unsqueeze(0));
  EXPECT_LT(max_error(logits[0], reference_olmo(tensors, ids)), 1e-4);
}

TEST(Olmo, BadCheckpointsAreClearErrors) {
  const auto dir = test::scratch_dir() / "olmo";
  auto tensors = random_olmo();
  write_folder(dir, with(olmo_config(), "clip_qkv", 8.0), tensors);
  EXPECT_THAT(load_error(dir), HasSubstr("\"clip_qkv\""));

  std::filesystem::remove_all(dir);  // a norm weight is not part of OLMo
  tensors.emplace_back("model.layers.0.input_layernorm.weight", torch::ones({kOlmoD}));
  write_folder(dir, olmo_config(), tensors);
  EXPECT_THAT(load_error(dir), HasSubstr("unexpected tensors"));
  EXPECT_THAT(load_error(dir), HasSubstr("model.layers.0.input_layernorm.weight"));
}

}  // namespace
}  // namespace poslens
