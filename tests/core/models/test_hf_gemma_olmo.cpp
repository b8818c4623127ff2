// Gemma (modeling_gemma.py) and OLMo (modeling_olmo.py): small random checkpoints in the real HF layout, loaded by PosLens and compared with
// references written here from the HF modeling files' semantics (float64 torch ops on the
// stored tensors, loops over heads, no code shared with the runtime).
#include "hf_test_support.h"

namespace poslens {
namespace {

using namespace hf_test;

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
  // Gemma 3's multimodal checkpoint is not a text model PosLens reads: named, with the list.
  write_folder(dir, with(gemma_config(), "architectures", Json::array({"Gemma3ForConditionalGeneration"})),
               tensors);
  auto message = load_error(dir);
  EXPECT_THAT(message, HasSubstr("unsupported architecture \"Gemma3ForConditionalGeneration\""));
  EXPECT_THAT(message, HasSubstr("Gemma2ForCausalLM"));
  EXPECT_THAT(message, HasSubstr("GPTNeoXForCausalLM"));

  // A Gemma 1 folder relabelled Gemma 2 lacks the sandwich norms: the first missing one named.
  std::filesystem::remove_all(dir);
  write_folder(dir, with(gemma_config(), "architectures", Json::array({"Gemma2ForCausalLM"})), tensors);
  EXPECT_THAT(load_error(dir), HasSubstr("missing tensor model.layers.0.pre_feedforward_layernorm.weight"));

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
