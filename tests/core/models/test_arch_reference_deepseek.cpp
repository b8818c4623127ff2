// Parity of DeepSeek-V2 and -V3 in tests/data/models/deepseek_v2, deepseek_v3 against HF
// transformers' own modeling code (modeling_deepseek_v2 / _v3 of 5.17, float32, eager;
// tools/make_arch_reference_deepseek.py): logits to 1e-4 and every pattern to 1e-5, with maps and
// without (the fused kernel on LibTorch 2.x, values narrower than q and k); multi-head latent
// attention with decoupled RoPE and YaRN's softmax scale, a dense layer before the experts, V2's
// and V3's grouped routing exactly as HF's, and the errors their configs and files can earn.
#include "arch_reference.h"

#include <cmath>

#include "core/base/error.h"
#include "core/formats/fp8.h"
#include "core/runtime/blocks.h"
#include "core/runtime/mixture_of_experts.h"

namespace poslens {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using test::case_dir;
using test::case_with;
using test::expect_parity;
using test::load_error;
using test::Reference;


/// HF yarn_get_mscale(factor, m) = 0.1·m·ln(factor) + 1.
double mscale(double factor, double m) { return 0.1 * m * std::log(factor) + 1.0; }

/// Each MoE layer's experts per token, recomputed by route_tokens from PosLens's own
/// hook_resid_mid, equal the reference's router_top.{l} (HF's router, sorted); layer 0 is dense.
void expect_routed_as_hf(const std::string& name, const Transformer& model) {
  const Reference ref(name);
  const auto& c = model.config();
  Captures captures;
  CaptureSink sink(CaptureSpec({"blocks.*.hook_resid_mid"}), captures);
  c10::InferenceMode guard;
  model.forward(ref.ids(), sink);
  EXPECT_EQ(model.layer_config(0).mlp, MlpType::Gated);
  for (int l = 1; l < c.n_layers; ++l) {
    const auto& w = model.weights().layers[static_cast<size_t>(l)];
    const auto h = blocks::norm(c, captures.find({HookKind::ResidMid, l}), w.mlp_norm, w.mlp_norm_bias)[0];
    const auto choice = blocks::route_tokens(model.layer_config(l), w, h);
    EXPECT_TRUE(std::get<0>(choice.experts.sort(-1)).equal(ref.ids("router_top." + std::to_string(l)))) << name << " layer " << l;
  }
}

/// The number of values the file stores for the model's layers (the multi-token-prediction
/// layer 4 of deepseek_v3 aside): the parameter count HF's model has, with V3's correction bias.
int64_t stored_values(const std::string& name) {
  SafetensorsFile file((case_dir(name) / "model.safetensors").string());
  int64_t n = 0;
  for (const auto& info : file.tensors()) {
    if (info.name.rfind("model.layers.4.", 0) == 0) continue;
    int64_t values = 1;
    for (const auto d : info.shape) values *= d;
    n += values;
  }
  return n;
}

// DeepSeek-V3 (transformers 5.17): q through a rank-12 latent, keys and values through a rank-10
// one; 8 rotary channels (interleaved pairs, YaRN factor 4 with mscale 1 / mscale_all_dim 0.8) and 6
// no-position ones per head, values 5 wide; layer 0 a dense MLP 40 wide, layers 1-3 8 experts in 4
// groups (2 kept), top 3 by sigmoid + correction bias, renormalised, × 2.5, two shared experts;
// a multi-token-prediction layer after the stack in the file.
TEST(ArchReference, DeepseekV3LatentAttentionDecoupledRopeAndBiasedGroupRouting) {
  expect_parity("deepseek_v3", case_dir("deepseek_v3"));
  const auto loaded = load_checkpoint(case_dir("deepseek_v3").string(), {"cpu", "float32", ""});
  const auto& model = *loaded.model;
  const auto& c = model.config();
  EXPECT_TRUE(c.latent_attention());
  EXPECT_EQ(c.q_lora_rank, 12);
  EXPECT_EQ(c.kv_lora_rank, 10);
  EXPECT_EQ(c.qk_rope_head_dim, 8);
  EXPECT_EQ(c.d_head, 14);
  EXPECT_EQ(c.value_head_dim(), 5);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_NEAR(c.attention_scale(), std::pow(mscale(4.0, 0.8), 2) / std::sqrt(14.0), 1e-12);
  EXPECT_EQ(c.expert_routing, ExpertRouting::SigmoidBiased);
  EXPECT_EQ(c.shared_expert_width, 24);
  EXPECT_EQ(model.layer_config(0).d_mlp, 40);
  EXPECT_EQ(model.layer_config(1).d_mlp, 12);
  EXPECT_EQ(loaded.n_params, stored_values("deepseek_v3"));
  const auto& w = model.weights().layers[1];
  EXPECT_EQ(w.w_q.sizes(), (std::vector<int64_t>{56, 12}));
  EXPECT_EQ(w.w_kv_b.sizes(), (std::vector<int64_t>{44, 10}));  // 4 heads × (6 no-position + 5 value rows)
  EXPECT_EQ(w.w_o.sizes(), (std::vector<int64_t>{32, 20}));
  EXPECT_TRUE(w.router_score_bias.defined());
  const auto text = describe(loaded);
  EXPECT_THAT(text, HasSubstr("d_head:            14 (8 rotary + 6 no-position channels, decoupled RoPE; values 5)\n"));
  EXPECT_THAT(text, HasSubstr("d_mlp:             12, 40 on the dense layer 0\n"));
  EXPECT_THAT(text, Not(HasSubstr("layer types:"))) << "one attention type on every layer";
  EXPECT_THAT(text, HasSubstr("weights sigmoid renormalised, chosen with a bias × 2.5, from the top 2 of 4 groups, "
                              "a shared expert 24 wide) on 3 of 4 layers"));
  EXPECT_THAT(text, HasSubstr("multi-head latent attention (kv_lora_rank 10, q_lora_rank 12)"));
  EXPECT_THAT(model.position_encoding().describe(), HasSubstr("yarn"));
  expect_routed_as_hf("deepseek_v3", model);

  // The hooks: q and k rotary channels first, then the no-position ones the rotation leaves as
  // they are; v and z values-wide.
  const Reference ref("deepseek_v3");
  Captures captures;
  CaptureSink sink(CaptureSpec({"blocks.1.attn.hook_q", "blocks.1.attn.hook_rot_q", "blocks.1.attn.hook_rot_k",
                                "blocks.1.attn.hook_k", "blocks.1.attn.hook_v", "blocks.1.attn.hook_z"}),
                   captures);
  c10::InferenceMode guard;
  model.forward(ref.ids(), sink);
  const auto q = captures.find({HookKind::Q, 1}), rot_q = captures.find({HookKind::RotQ, 1});
  EXPECT_EQ(q.sizes(), (std::vector<int64_t>{1, 21, 4, 14}));
  EXPECT_EQ(captures.find({HookKind::V, 1}).sizes(), (std::vector<int64_t>{1, 21, 4, 5}));
  EXPECT_EQ(captures.find({HookKind::Z, 1}).sizes(), (std::vector<int64_t>{1, 21, 4, 5}));
  EXPECT_TRUE(rot_q.narrow(-1, 8, 6).equal(q.narrow(-1, 8, 6)));
  EXPECT_FALSE(torch::allclose(rot_q.narrow(-1, 0, 8), q.narrow(-1, 0, 8)));
  // One rotary key for every head (kv_a_proj_with_mqa's shared rows), per-head no-position keys.
  const auto k = captures.find({HookKind::RotK, 1});
  EXPECT_TRUE(k.narrow(-1, 0, 8).select(2, 0).equal(k.narrow(-1, 0, 8).select(2, 3)));
  EXPECT_FALSE(torch::allclose(k.narrow(-1, 8, 6).select(2, 0), k.narrow(-1, 8, 6).select(2, 3)));
}

// DeepSeek-V2 as V2-Lite is built (transformers 5.17): a plain q_proj (q_lora_rank null), the
// softmax over all 8 experts, "group_limited_greedy" (the best 2 of 4 groups by their best
// expert), top 3 not renormalised, × 1.5; YaRN with mscale = mscale_all_dim = 0.707, so cos and
// sin are unscaled and the softmax scale is d_head^-1/2 · mscale(4, 0.707)².
TEST(ArchReference, DeepseekV2PlainQueryAndGroupLimitedSoftmaxRouting) {
  expect_parity("deepseek_v2", case_dir("deepseek_v2"));
  const auto loaded = load_checkpoint(case_dir("deepseek_v2").string(), {"cpu", "float32", ""});
  const auto& model = *loaded.model;
  const auto& c = model.config();
  EXPECT_EQ(c.q_lora_rank, 0);
  EXPECT_FALSE(model.weights().layers[0].w_q_a.defined());
  EXPECT_EQ(model.weights().layers[0].w_q.sizes(), (std::vector<int64_t>{56, 32}));
  EXPECT_NEAR(c.attention_scale(), std::pow(mscale(4.0, 0.707), 2) / std::sqrt(14.0), 1e-12);
  EXPECT_EQ(c.expert_routing, ExpertRouting::SoftmaxAll);
  EXPECT_EQ(c.n_expert_groups, 4);
  EXPECT_EQ(c.topk_expert_groups, 2);
  EXPECT_EQ(loaded.n_params, stored_values("deepseek_v2"));
  EXPECT_THAT(describe(loaded), HasSubstr("weights softmax over all experts × 1.5, from the top 2 of 4 groups"));
  EXPECT_THAT(c.to_json(), HasSubstr("\"kv_lora_rank\":10"));
  expect_routed_as_hf("deepseek_v2", model);
  // Plain "greedy" routing ignores the groups: other experts, other logits.
  const auto greedy = case_with("deepseek_v2", "greedy", [](nlohmann::json& j) { j["topk_method"] = "greedy"; });
  const auto plain = load_checkpoint(greedy.string(), {"cpu", "float32", ""});
  EXPECT_EQ(plain.model->config().n_expert_groups, 1);
  c10::InferenceMode guard;
  const Reference ref("deepseek_v2");
  EXPECT_FALSE(torch::allclose(plain.model->forward(ref.ids()).cpu(), ref["logits"], 0, 1e-4));
}

// DeepSeek-V3's own release format (tools/make_fp8_reference.py): deepseek_v3's layer projections
// quantised by HF's Fp8Quantize to F8_E4M3 with a float32 scale per block of 2 rows × 4 columns
// (quantization_config.weight_block_size; kv_b_proj stays float32, as HF leaves a weight its block
// does not divide), against what HF computes after from_pretrained dequantises the folder on a CPU.
TEST(ArchReference, DeepseekV3Fp8BlockQuantisedRelease) {
  expect_parity("deepseek_v3_fp8", case_dir("deepseek_v3_fp8"));
  const auto loaded = load_checkpoint(case_dir("deepseek_v3_fp8").string(), {"cpu", "float32", ""});
  expect_routed_as_hf("deepseek_v3_fp8", *loaded.model);
  EXPECT_THAT(loaded.stored_dtype, HasSubstr("F32+F8_E4M3 (F8_E4M3: 132 weights dequantised, in blocks of [2, 4])"));
  // The scales are not parameters: the count of the float32 original.
  EXPECT_EQ(loaded.n_params, load_checkpoint(case_dir("deepseek_v3").string(), {"cpu", "float32", ""}).n_params);
  // Every code's value as PyTorch's float8_e4m3fn reads it.
  const Reference ref("deepseek_v3_fp8");
  const auto theirs = ref["e4m3_values"], nan = theirs.isnan();
  EXPECT_TRUE(e4m3_values().isnan().equal(nan));
  EXPECT_TRUE(e4m3_values().masked_fill(nan, 0).equal(theirs.masked_fill(nan, 0)));

  const auto edited = [](const std::string& tag, const std::function<void(nlohmann::json&)>& edit) {
    return load_error(case_with("deepseek_v3_fp8", tag, edit));
  };
  EXPECT_THAT(edited("block-4x2", [](nlohmann::json& j) { j["quantization_config"]["weight_block_size"] = {4, 2}; }),
              HasSubstr("scaled in blocks of [4, 2] (weight_block_size) needs"));
  EXPECT_THAT(edited("block-text", [](nlohmann::json& j) { j["quantization_config"]["weight_block_size"] = "2x4"; }),
              HasSubstr("quantization_config.weight_block_size must be two positive integers, got \"2x4\""));
  EXPECT_THAT(edited("gptq", [](nlohmann::json& j) { j["quantization_config"]["quant_method"] = "gptq"; }),
              HasSubstr("quantization_config.quant_method \"gptq\": PosLens dequantises \"fp8\""));
  // Without a weight_block_size, DeepSeek's 128 × 128: one block per weight here, which the
  // file's scales do not match.
  EXPECT_THAT(edited("block-default", [](nlohmann::json& j) { j["quantization_config"].erase("weight_block_size"); }),
              HasSubstr("scaled in blocks of [128, 128] (weight_block_size) needs"));
}

// What a DeepSeek config or file can get wrong, each named.
TEST(ArchReference, DeepseekConfigAndFileErrors) {
  const auto edited = [](const std::string& tag, const std::function<void(nlohmann::json&)>& edit) {
    return load_error(case_with("deepseek_v3", tag, edit));
  };
  EXPECT_THAT(edited("kv-2", [](nlohmann::json& j) { j["num_key_value_heads"] = 2; }),
              HasSubstr("num_key_value_heads 2 differs from num_attention_heads 4"));
  EXPECT_THAT(edited("groups-3", [](nlohmann::json& j) { j["n_group"] = 3; }),
              HasSubstr("8 experts in 3 groups, 2 of them chosen"));
  EXPECT_THAT(edited("dense-2", [](nlohmann::json& j) { j["first_k_dense_replace"] = 2; }),
              HasSubstr("missing tensor model.layers.1.mlp.gate_proj.weight"));
  EXPECT_THAT(edited("rope-6", [](nlohmann::json& j) { j["qk_rope_head_dim"] = 6; }),
              HasSubstr("expected [48, 12], got [56, 12] for model.layers.0.self_attn.q_b_proj.weight"));
  EXPECT_THAT(edited("act", [](nlohmann::json& j) { j["hidden_act"] = "gelu"; }),
              HasSubstr("hidden_act \"gelu\" is not supported for DeepseekV3ForCausalLM"));
  EXPECT_THAT(load_error(case_with("deepseek_v2", "noaux", [](nlohmann::json& j) { j["topk_method"] = "noaux_tc"; })),
              HasSubstr("topk_method \"noaux_tc\" is not supported for DeepseekV2ForCausalLM"));
  // A scale_inv beside a weight that is not FP8 is not silently dropped.
  const auto fp8 = case_with("deepseek_v3", "fp8", [](nlohmann::json&) {});
  {
    SafetensorsFile file((fp8 / "model.safetensors").string());
    std::vector<std::pair<std::string, at::Tensor>> tensors;
    for (const auto& info : file.tensors()) tensors.emplace_back(info.name, file.load(info.name).clone());
    tensors.emplace_back("model.layers.0.self_attn.q_a_proj.weight_scale_inv", torch::ones({1, 1}));
    write_safetensors((fp8 / "model.safetensors").string(), tensors);
  }
  EXPECT_THAT(load_error(fp8), AllOf(HasSubstr("unexpected tensors"),
                                     HasSubstr("model.layers.0.self_attn.q_a_proj.weight_scale_inv")));
}

// On a GPU (`ctest -L gpu`, tools/gpu_bench.sh): the same parity through CUDA's kernels — the
// memory-efficient one with its row log-sum-exp, v padded to q's width.
TEST(Gpu, DeepseekLatentAttentionParityOnCuda) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device in this LibTorch build";
  for (const char* name : {"deepseek_v2", "deepseek_v3"}) expect_parity(name, case_dir(name), false, "cuda");
}

}  // namespace
}  // namespace poslens
