// GPT-NeoX (Pythia, modeling_gpt_neox.py) and Phi (modeling_phi.py): small random checkpoints in the real HF layout, loaded by PosLens and compared with
// references written here from the HF modeling files' semantics (float64 torch ops on the
// stored tensors, loops over heads, no code shared with the runtime).
#include "hf_test_support.h"

namespace poslens {
namespace {

using namespace hf_test;

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
  EXPECT_EQ(loaded.model->position_encoding().rotary_info()->rotary_dim, kNeoxRot);
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
  EXPECT_THAT(load_error(dir), HasSubstr("\"rotary_dim\" must be even"));

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
  EXPECT_EQ(loaded.model->position_encoding().rotary_info()->rotary_dim, kPhiRot);
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

}  // namespace
}  // namespace poslens
