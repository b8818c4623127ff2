// Parity of Gemma 4's text stack in tests/data/models/gemma4, gemma4_dense, gemma4_moe and gemma4_multimodal
// against HF transformers' own modeling code (modeling_gemma4 of 5.17, float32, eager;
// tools/make_arch_reference_recent.py): logits to 1e-4 and every pattern to 1e-5, with maps and
// without (the fused kernel on LibTorch 2.x); per-layer head sizes, proportional RoPE, values
// from the keys' projection, keys and values shared between layers, per-layer inputs, layer
// scalars, the mixture of experts beside the dense MLP, and the errors its configs can earn.
#include "arch_reference.h"

#include "analysis/frequency_usage.h"
#include "analysis/probe.h"
#include "analysis/value_norms.h"
#include "core/base/error.h"
#include "core/runtime/blocks.h"
#include "core/runtime/mixture_of_experts.h"

namespace poslens {
namespace {

using ::testing::HasSubstr;
using test::case_dir;
using test::case_with;
using test::expect_parity;
using test::load_error;
using test::Reference;

/// The number of values in every tensor of a case's model.safetensors, its own count of the
/// parameters a loader must use.
int64_t stored_values(const std::string& name) {
  SafetensorsFile file((case_dir(name) / "model.safetensors").string());
  int64_t total = 0;
  for (const auto& info : file.tensors()) {
    int64_t n = 1;
    for (const auto d : info.shape) n *= d;
    total += n;
  }
  return total;
}

// The "E" layout (gemma-4-E2B/E4B): layers 0, 1, 3, 4 local (window 4, heads of 8, RoPE base 100),
// 2 and 5 global (heads of 16, proportional RoPE: 2 of 8 components rotate, base 10000); layers 4
// and 5 reuse the keys and values of layers 3 and 2 (the last earlier layer of their type) and
// have MLPs twice as wide; per-layer inputs
// of 8 values; layer scalars; logits capped at 30.
TEST(ArchReference, Gemma4PerLayerInputsSharedKeysAndProportionalRope) {
  expect_parity("gemma4", case_dir("gemma4"));
  const auto loaded = load_checkpoint(case_dir("gemma4").string(), {"cpu", "float32", ""});
  const auto& model = *loaded.model;
  const auto& c = model.config();
  EXPECT_EQ(layer_types_summary(c), "local 4: 0-1, 3-4; global: 2, 5");
  EXPECT_EQ(c.d_head, 8);
  EXPECT_EQ(c.widest_head(), 16);
  EXPECT_TRUE(c.per_layer_head_sizes());
  EXPECT_EQ(model.layer_config(2).d_head, 16);
  EXPECT_EQ(model.layer_config(2).n_kv_heads, 2);
  EXPECT_FALSE(model.layer_config(2).values_from_keys);
  EXPECT_EQ(model.layer_config(3).kv_source_layer, -1);
  EXPECT_EQ(model.layer_config(4).kv_source_layer, 3);
  EXPECT_EQ(model.layer_config(5).kv_source_layer, 2);
  EXPECT_EQ(model.layer_config(5).d_mlp, 96);
  EXPECT_EQ(model.layer_config(3).d_mlp, 48);
  EXPECT_EQ(c.per_layer_input_width, 8);
  EXPECT_DOUBLE_EQ(c.attention_scale(), 1.0);
  EXPECT_DOUBLE_EQ(c.final_logit_softcap, 30.0);
  EXPECT_THAT(model.position_encoding(0).describe(), HasSubstr("rope_theta=100)"));
  EXPECT_THAT(model.position_encoding(2).describe(),
              HasSubstr("rope_theta=10000, proportional: 2 of 8 components rotate)"));
  const auto info = model.position_encoding(5).rotary_info(13);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->rotary_dim, 16);
  EXPECT_NEAR(info->theta[1].item<double>(), std::pow(10000.0, -2.0 / 16.0), 1e-15);
  EXPECT_EQ(info->theta.narrow(0, 2, 6).abs().sum().item<double>(), 0.0);
  // Every stored tensor is used (the shared layers store no k/v projections).
  EXPECT_EQ(parameter_count(model.weights()), stored_values("gemma4"));
  EXPECT_FALSE(model.weights().layers[4].w_k.defined());
  EXPECT_THAT(c.to_json(), HasSubstr(R"("kv_source_layer":3)"));
  EXPECT_THAT(c.to_json(), HasSubstr(R"("per_layer_input_width":8)"));
  const auto text = describe(loaded);
  EXPECT_THAT(text, HasSubstr("d_head:            8, 16 on layers 2, 5\n"));
  EXPECT_THAT(text, HasSubstr("d_mlp:             48, 96 on layers 4, 5\n"));
  EXPECT_THAT(text, HasSubstr("v RMSNorm per head (no gain), layers 4, 5 reuse the keys and values of layers 3, 2, "
                              "per-layer inputs of 8 (PLE), a scalar on each layer's output"));
  EXPECT_THAT(text, HasSubstr("\n  layers 2, 5: RoPE (half_split pairs, rope_theta=10000, proportional: 2 of 8 components rotate)"));

  // hook_k / hook_v of a sharing layer are the keys and values it reads: its source's.
  const Reference ref("gemma4");
  Captures captures;
  CaptureSink sink(CaptureSpec({"blocks.*.attn.hook_k", "blocks.*.attn.hook_v", "blocks.*.attn.hook_q"}), captures);
  c10::InferenceMode guard;
  model.forward(ref.ids(), sink);
  EXPECT_TRUE(torch::equal(captures.find({HookKind::K, 4}), captures.find({HookKind::K, 3})));
  EXPECT_TRUE(torch::equal(captures.find({HookKind::V, 5}), captures.find({HookKind::V, 2})));
  EXPECT_EQ(captures.find({HookKind::Q, 2}).sizes(), (std::vector<int64_t>{1, 13, 4, 16}));
  EXPECT_EQ(captures.find({HookKind::Q, 1}).sizes(), (std::vector<int64_t>{1, 13, 4, 8}));
  // Values are RMS-normed without a gain: each head's mean square is 1 (up to eps).
  const auto v = captures.find({HookKind::V, 0});
  EXPECT_TRUE(torch::allclose(v.pow(2).mean(-1), torch::ones({1, 13, 2}), 1e-4, 1e-4));
  // A sharing layer's q/k logits need its source layer's input: refused with a message.
  try {
    model.qk_logits(4, torch::zeros({1, 3, 32}));
    ADD_FAILURE() << "qk_logits of a sharing layer did not throw";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("layer 4 reuses the keys of layer 3"));
  }
}

// The large dense layout (gemma-4-31B): the global layers' values are their keys' projection
// (attention_k_eq_v) with one KV head of 16 values; no per-layer inputs, no sharing.
TEST(ArchReference, Gemma4DenseGlobalValuesFromKeys) {
  expect_parity("gemma4_dense", case_dir("gemma4_dense"));
  const auto loaded = load_checkpoint(case_dir("gemma4_dense").string(), {"cpu", "float32", ""});
  const auto& model = *loaded.model;
  EXPECT_EQ(model.layer_config(5).n_kv_heads, 1);
  EXPECT_EQ(model.layer_config(5).d_head, 16);
  EXPECT_TRUE(model.layer_config(5).values_from_keys);
  EXPECT_FALSE(model.layer_config(4).values_from_keys);
  EXPECT_EQ(model.config().per_layer_input_width, 0);
  EXPECT_FALSE(model.weights().layers[5].w_v.defined());
  EXPECT_EQ(parameter_count(model.weights()), stored_values("gemma4_dense"));
  EXPECT_THAT(describe(loaded), HasSubstr("layer types:       local 4: 0-1, 3-4; global: 2, 5"));
  EXPECT_THAT(describe(loaded), HasSubstr("n_kv_heads:        2, 1 on layers 2, 5\n"));
  EXPECT_THAT(describe(loaded), HasSubstr("values from the keys' projection on 2 of 6 layers"));

  // Configs written before per_layer_config name the global layers' sizes in two keys of their own.
  const auto older = case_with("gemma4_dense", "global-keys", [](nlohmann::json& j) {
    j.erase("per_layer_config");
    j["global_head_dim"] = 16;
    j["num_global_key_value_heads"] = 1;
  });
  expect_parity("gemma4_dense", older);
}

// The mixture-of-experts layout (gemma-4-26B-A4B): every layer's dense MLP (48 wide, the shared
// expert) beside 4 experts of 16, top 2, chosen by a router with its own norm, scale and
// per-expert scale from the residual stream itself; three more norms per layer.
TEST(ArchReference, Gemma4ExpertsBesideTheDenseMlp) {
  expect_parity("gemma4_moe", case_dir("gemma4_moe"));
  const auto loaded = load_checkpoint(case_dir("gemma4_moe").string(), {"cpu", "float32", ""});
  const auto& model = *loaded.model;
  const auto& c = model.config();
  EXPECT_EQ(c.mlp, MlpType::MoE);
  EXPECT_TRUE(c.experts_beside_mlp);
  EXPECT_EQ(c.expert_routing, ExpertRouting::ScaledSoftmaxAll);
  EXPECT_EQ(c.n_experts, 4);
  EXPECT_EQ(c.n_experts_per_token, 2);
  EXPECT_EQ(c.d_mlp, 16);
  EXPECT_EQ(c.shared_expert_width, 48);
  EXPECT_EQ(parameter_count(model.weights()), stored_values("gemma4_moe"));
  EXPECT_THAT(describe(loaded), HasSubstr("mixture-of-experts MLP (4 experts, top 2, gated gelu_new, weights softmax over "
                                          "all experts renormalised over the top k × a scale per expert, from the normed "
                                          "input, beside a dense gated MLP 48 wide)"));

  // Each token's experts, routed by PosLens from its own hook_resid_mid, are HF's.
  const Reference ref("gemma4_moe");
  Captures captures;
  CaptureSink sink(CaptureSpec({"blocks.*.hook_resid_mid"}), captures);
  ForwardOptions options;
  options.blocking.mlp_rows = 4;  // the block in chunks of positions gives the same logits
  c10::InferenceMode guard;
  const auto logits = model.forward(ref.ids(), sink, {}, options);
  EXPECT_TRUE(torch::allclose(logits, ref["logits"], 0, 1e-4));
  for (int l = 0; l < c.n_layers; ++l) {
    const auto choice = blocks::route_tokens(c, model.weights().layers[static_cast<size_t>(l)],
                                             captures.find({HookKind::ResidMid, l})[0]);
    EXPECT_TRUE(std::get<0>(choice.experts.sort(-1)).equal(ref.ids("router_top." + std::to_string(l)))) << "layer " << l;
    EXPECT_EQ(choice.weights.scalar_type(), torch::kFloat32);
  }

  // Gemma4RMSNorm multiplies by its gain in float32 before the cast: in bfloat16 PosLens's norm
  // is HF's bit for bit, where LlamaRMSNorm's order (cast, then scale) differs.
  // Bit for bit on purpose: the two orders differ only in bfloat16's last bit (115 of 416 values
  // here), so only equality tells them apart. The norm is elementwise after one float32 mean over
  // 32 values, a single pass at any thread count, and equal under LibTorch 1.13 and 2.11; a CPU
  // that sums those 32 in another SIMD order could move a value across a bfloat16 rounding
  // boundary (odds about 416·2^-16 per run).
  EXPECT_TRUE(c.norm_gain_in_float32);
  const auto x = ref["bf16_norm.input"].to(torch::kBFloat16), gain = ref["bf16_norm.weight"].to(torch::kBFloat16);
  const auto hf = ref["bf16_norm.output"].to(torch::kBFloat16);
  EXPECT_TRUE(blocks::norm(c, x, gain, {}).equal(hf));
  auto llama_order = c;
  llama_order.norm_gain_in_float32 = false;
  EXPECT_FALSE(blocks::norm(llama_order, x, gain, {}).equal(hf));
}

// Gemma 4 as the Hub ships it (Gemma4ForConditionalGeneration): the gemma4 case's text stack under
// model.language_model., beside a vision tower and embedder a text-only forward never reads.
TEST(ArchReference, Gemma4ConditionalGenerationRunsItsTextStack) {
  expect_parity("gemma4_multimodal", case_dir("gemma4_multimodal"));
  const auto loaded = load_checkpoint(case_dir("gemma4_multimodal").string(), {"cpu", "float32", ""});
  const auto text_only = load_checkpoint(case_dir("gemma4").string(), {"cpu", "float32", ""});
  EXPECT_EQ(loaded.model->config().architecture, "Gemma4ForConditionalGeneration");
  EXPECT_EQ(parameter_count(loaded.model->weights()), parameter_count(text_only.model->weights()));
  const auto bare = case_with("gemma4_multimodal", "no-text-config", [](nlohmann::json& j) { j.erase("text_config"); });
  EXPECT_THAT(load_error(bare), HasSubstr("Gemma4ForConditionalGeneration needs a \"text_config\" object"));
}

// What Gemma 4's configs can say that PosLens does not run, or that cannot be a model.
TEST(ArchReference, Gemma4ConfigErrorsNameTheKey) {
  const auto moe = case_with("gemma4_dense", "moe", [](nlohmann::json& j) { j["enable_moe_block"] = true; });
  EXPECT_THAT(load_error(moe), HasSubstr("enable_moe_block needs a positive num_experts"));
  const auto moe_wide = case_with("gemma4", "moe-double-wide", [](nlohmann::json& j) {
    j["enable_moe_block"] = true;
    j["num_experts"] = 4;
    j["top_k_experts"] = 2;
    j["moe_intermediate_size"] = 16;
  });
  EXPECT_THAT(load_error(moe_wide), HasSubstr("use_double_wide_mlp with enable_moe_block is not supported"));
  const auto too_many = case_with("gemma4_moe", "top-k", [](nlohmann::json& j) { j["top_k_experts"] = 5; });
  EXPECT_THAT(load_error(too_many), HasSubstr("1 <= n_experts_per_token (5) <= n_experts (4)"));
  const auto bidirectional =
      case_with("gemma4_dense", "bidirectional", [](nlohmann::json& j) { j["use_bidirectional_attention"] = "all"; });
  EXPECT_THAT(load_error(bidirectional), HasSubstr("use_bidirectional_attention \"all\" is not supported"));
  const auto odd_key = case_with("gemma4_dense", "per-layer-key", [](nlohmann::json& j) {
    j["per_layer_config"]["5"]["sliding_window"] = 8;
  });
  EXPECT_THAT(load_error(odd_key), HasSubstr("per_layer_config.5: \"sliding_window\" is not supported"));
  const auto bad_layer =
      case_with("gemma4_dense", "per-layer-index", [](nlohmann::json& j) { j["per_layer_config"]["six"] = nlohmann::json::object(); });
  EXPECT_THAT(load_error(bad_layer), HasSubstr("per_layer_config.six: not a layer index in [0, 6)"));
  const auto all_shared = case_with("gemma4", "all-shared", [](nlohmann::json& j) { j["num_kv_shared_layers"] = 6; });
  EXPECT_THAT(load_error(all_shared), HasSubstr("num_kv_shared_layers 6 must be in [0, num_hidden_layers)"));
  // Layers 1-5 sharing: layer 1 (local) reads layer 0, but global layer 2 has no earlier global layer.
  const auto no_source = case_with("gemma4", "no-source", [](nlohmann::json& j) { j["num_kv_shared_layers"] = 5; });
  EXPECT_THAT(load_error(no_source), HasSubstr("layer 2 shares keys and values, but no earlier layer has its type"));
  const auto partial = case_with("gemma4", "partial", [](nlohmann::json& j) {
    j["rope_parameters"]["full_attention"]["partial_rotary_factor"] = 1.5;
  });
  EXPECT_THAT(load_error(partial), HasSubstr("partial_rotary_factor must be in (0, 1], got 1.5"));
}

// The analyses that keep one row per layer and component or KV head pad the layers that have
// fewer (the local layers' 4 components beside the global layers' 8; one KV head on the dense
// model's global layers) with NaN, and fill each layer's own.
TEST(ArchReference, Gemma4AnalysesPadLayersWithFewerComponentsOrKvHeads) {
  const auto loaded = load_checkpoint(case_dir("gemma4").string(), {"cpu", "float32", ""});
  const std::vector<int64_t> ids = {5, 17, 33, 48, 9, 60, 12, 70, 3, 44, 81, 25};
  const auto finite = [](const at::Tensor& t) { return torch::isfinite(t).all().item<bool>(); };
  const auto nan = [](const at::Tensor& t) { return torch::isnan(t).all().item<bool>(); };

  ProbeOptions options;
  options.length = 12;
  options.samples = 8;
  const auto probe = run_probe(loaded, options);
  ASSERT_EQ(probe.components.size(2), 8);
  ASSERT_TRUE(probe.theta_per_layer.defined());
  EXPECT_TRUE(finite(probe.theta_per_layer[0].narrow(0, 0, 4)));
  EXPECT_TRUE(nan(probe.theta_per_layer[0].narrow(0, 4, 4)));
  EXPECT_TRUE(nan(probe.vaf[0].narrow(0, 4, 4)));
  EXPECT_TRUE(finite(probe.vaf[2].narrow(0, 0, 2)));  // the two rotating components of a global layer
  EXPECT_EQ(probe.theta_per_layer[2].narrow(0, 2, 6).abs().sum().item<double>(), 0.0);  // p-RoPE's θ = 0
  EXPECT_EQ(probe.components[0].narrow(1, 4, 4).abs().sum().item<double>(), 0.0);
  // The components of each layer still add up to its logits (no remainder: every dim rotates).
  EXPECT_TRUE(torch::allclose(probe.components.sum(2), probe.scores, 1e-4, 1e-4));

  const auto usage = compute_frequency_usage(loaded, ids);
  EXPECT_EQ(usage.q_norm.size(2), 8);
  EXPECT_TRUE(nan(usage.q_norm[1].narrow(1, 4, 4)));
  EXPECT_TRUE(finite(usage.q_norm[1].narrow(1, 0, 4)));
  EXPECT_TRUE(finite(usage.q_norm[5]));

  const auto dense = load_checkpoint(case_dir("gemma4_dense").string(), {"cpu", "float32", ""});
  const auto norms = compute_value_norms(dense, ids).norms;
  EXPECT_EQ(norms.sizes(), (std::vector<int64_t>{6, 2, 12}));
  EXPECT_TRUE(nan(norms[2][1]));
  EXPECT_TRUE(finite(norms[2][0]));
  // v_norm: every value's RMS is 1, so its norm is √d_head (8 local, 16 global).
  EXPECT_TRUE(torch::allclose(norms[0], torch::full({2, 12}, std::sqrt(8.0)), 1e-4, 1e-4));
  EXPECT_TRUE(torch::allclose(norms[2][0], torch::full({12}, 4.0), 1e-4, 1e-4));
}

}  // namespace
}  // namespace poslens
