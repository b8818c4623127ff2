// Parity of the families of 2024–26 — Qwen3, OLMo 2, Gemma 2/3, Cohere 2, gpt-oss, Mixtral,
// Llama 4 (Scout, Maverick), ModernBERT, SmolLM3, Phi-3 — in tests/data/models/ against what HF transformers' own
// modeling code (modeling_qwen3, modeling_olmo2, modeling_gemma2/3, modeling_cohere2,
// modeling_gpt_oss, modeling_mixtral, modeling_llama4, modeling_modernbert, modeling_smollm3,
// modeling_phi3; tools/make_arch_reference_recent.py) computed: logits to 1e-4 and every layer's
// pattern to 1e-5, float32, with maps and without (the fused kernel on LibTorch 2.x); their
// layer types, per-layer encodings, expert routing, and the errors their configs can earn.
#include "arch_reference.h"

#include <algorithm>
#include <functional>

#include <c10/core/CPUAllocator.h>
#include <torch/version.h>

#include "core/base/error.h"
#include "core/runtime/blocks.h"

namespace poslens {
namespace {

using ::testing::HasSubstr;
using test::case_dir;
using test::case_with;
using test::expect_parity;
using test::load_error;
using test::Reference;
namespace fs = std::filesystem;


// Qwen3 (transformers 5.17, tools/make_arch_reference_recent.py): q/k RMSNorm per head, and
// rope_theta 50000 where transformers >= 5 writes it (rope_parameters) — the default 10000 would
// move every logit.
TEST(ArchReference, Qwen3QkNormPerHeadAndRopeParameters) {
  expect_parity("qwen3", case_dir("qwen3"));
  const auto loaded = load_checkpoint(case_dir("qwen3").string(), {"cpu", "float32", ""});
  const auto& c = loaded.model->config();
  EXPECT_EQ(c.qk_norm, QkNorm::PerHead);
  EXPECT_EQ(c.d_head, 12);
  EXPECT_FALSE(c.norm_gain_in_float32);  // Qwen3RMSNorm is LlamaRMSNorm: cast, then scale
  EXPECT_THAT(c.pe_components.at(0).params_json, HasSubstr("\"rope_theta\":50000"));
  EXPECT_THAT(c.to_json(), HasSubstr("\"qk_norm\":\"per_head\""));
  EXPECT_THAT(describe(loaded), HasSubstr("q/k RMSNorm per head"));
  // Weights never borrow the file's memory map (the model outlives the opened file), float32
  // weights of a float32 file included: each is a block LibTorch's CPU allocator made.
  const auto owned = [](const at::Tensor& t) {
    return t.storage().data_ptr().get_deleter() == c10::GetCPUAllocator()->raw_deleter();
  };
  const auto& w = loaded.model->weights();
  EXPECT_TRUE(owned(w.tok_embed));
  EXPECT_TRUE(owned(w.final_norm));
  for (const auto& layer : w.layers)
    for (const auto& t : {layer.w_q, layer.w_k, layer.w_v, layer.w_o, layer.w_up, layer.w_down, layer.q_norm})
      EXPECT_TRUE(owned(t));
}

// Qwen3 quantised to FP8 by compressed-tensors (tools/make_compressed_fp8_reference.py), as
// llm-compressor's "-FP8" / "-FP8-dynamic" / "-FP8-block" releases: layer 0 per output channel,
// layer 1's attention per tensor (with static input scales), its MLP in blocks of [16, 12];
// against HF's forward of the folder (compressed-tensors decompresses the weights).
TEST(ArchReference, Qwen3Fp8CompressedTensors) {
  expect_parity("qwen3_fp8_compressed", case_dir("qwen3_fp8_compressed"));
  const auto loaded = load_checkpoint(case_dir("qwen3_fp8_compressed").string(), {"cpu", "float32", ""});
  EXPECT_EQ(loaded.stored_dtype,
            "F32+F8_E4M3 (F8_E4M3: 14 weights dequantised, 3 in blocks of [16, 12], 7 per output channel, "
            "4 per tensor; 4 activation scales unread)");
  EXPECT_EQ(loaded.n_params, load_checkpoint(case_dir("qwen3").string(), {"cpu", "float32", ""}).n_params);
  // Dequantised straight to the dtype asked: the values float32's weights converted.
  const auto bf16 = load_checkpoint(case_dir("qwen3_fp8_compressed").string(), {"cpu", "bfloat16", ""});
  const auto& w32 = loaded.model->weights().layers, &w16 = bf16.model->weights().layers;
  for (size_t l = 0; l < w32.size(); ++l)
    for (const auto f : {&LayerWeights::w_q, &LayerWeights::w_k, &LayerWeights::w_o, &LayerWeights::w_down}) {
      EXPECT_EQ((w16[l].*f).scalar_type(), torch::kBFloat16);
      EXPECT_TRUE((w16[l].*f).equal((w32[l].*f).to(torch::kBFloat16))) << "layer " << l;
    }
  const auto edited = [](const std::string& tag, const std::function<void(nlohmann::json&)>& edit) {
    return load_error(case_with("qwen3_fp8_compressed", tag, edit));
  };
  EXPECT_THAT(edited("block-12x16",
                     [](nlohmann::json& j) {
                       j["quantization_config"]["config_groups"]["group_2"]["weights"]["block_structure"] = {12, 16};
                     }),
              HasSubstr("model.layers.1.mlp.down_proj.weight [32, 48] scaled per output channel or per tensor or in "
                        "blocks of [12, 16] (quantization_config.config_groups) needs "
                        "model.layers.1.mlp.down_proj.weight_scale F32 [32, 1] or [1, 1] or [3, 3], it is F32 [2, 4]"));
  EXPECT_THAT(edited("w4a16", [](nlohmann::json& j) { j["quantization_config"]["format"] = "pack-quantized";
                                                       for (auto& g : j["quantization_config"]["config_groups"])
                                                         g.erase("format"); }),
              HasSubstr("config_groups.group_0 format \"pack-quantized\": PosLens reads compressed-tensors' "
                        "\"float-quantized\" FP8 weights"));
}

// Qwen3's weights as a sharded pickle checkpoint (pytorch_model-0000k-of-00003.bin behind
// pytorch_model.bin.index.json, written by huggingface_hub; tools/make_sharded_bin_fixture.py):
// the same outputs as qwen3's reference, which transformers computes from these shards too.
TEST(ArchReference, Qwen3ShardedPytorchModelBin) {
  expect_parity("qwen3", case_dir("qwen3_sharded_bin"));
  const auto sharded = load_checkpoint(case_dir("qwen3_sharded_bin").string(), {"cpu", "float32", ""});
  const auto plain = load_checkpoint(case_dir("qwen3").string(), {"cpu", "float32", ""});
  EXPECT_EQ(sharded.format, "huggingface (sharded PyTorch zip)");
  EXPECT_EQ(sharded.n_params, plain.n_params);
  EXPECT_EQ(sharded.weights_sha256.size(), 64u);
  for (size_t l = 0; l < plain.model->weights().layers.size(); ++l)
    EXPECT_TRUE(sharded.model->weights().layers[l].w_q.equal(plain.model->weights().layers[l].w_q));

  const auto copy = [](const std::string& tag) {
    const auto dir = test::scratch_dir() / ("qwen3_sharded_bin-" + tag);
    fs::create_directories(dir);
    for (const auto& entry : fs::directory_iterator(case_dir("qwen3_sharded_bin")))
      fs::copy_file(entry.path(), dir / entry.path().filename(), fs::copy_options::overwrite_existing);
    return dir;
  };
  // transformers' preference: safetensors beside the pickles wins.
  const auto both = copy("both");
  fs::copy_file(case_dir("qwen3") / "model.safetensors", both / "model.safetensors");
  EXPECT_EQ(load_checkpoint(both.string(), {"cpu", "float32", ""}).format, "huggingface (safetensors)");
  // A missing shard and an index that misplaces a tensor are named.
  const auto missing = copy("missing");
  fs::remove(missing / "pytorch_model-00002-of-00003.bin");
  EXPECT_THAT(load_error(missing), HasSubstr((missing / "pytorch_model-00002-of-00003.bin").string()));
  const auto misplaced = copy("misplaced");
  std::ifstream in(misplaced / "pytorch_model.bin.index.json");
  auto index = nlohmann::json::parse(in);
  index["weight_map"]["lm_head.weight"] = "pytorch_model-00001-of-00003.bin";
  std::ofstream(misplaced / "pytorch_model.bin.index.json") << index.dump();
  EXPECT_THAT(load_error(misplaced),
              HasSubstr("pytorch_model.bin.index.json: weight_map puts tensor \"lm_head.weight\" in " +
                        (misplaced / "pytorch_model-00001-of-00003.bin").string() + ", which has no tensor of that name"));
}

// OLMo 2 (transformers 5.17): norms on the sublayers' outputs, q/k RMSNorm over the whole
// projection (GQA: k_norm over n_kv_heads·d_head).
TEST(ArchReference, Olmo2SublayerOutputNormsAndWholeProjectionQkNorm) {
  expect_parity("olmo2", case_dir("olmo2"));
  const auto loaded = load_checkpoint(case_dir("olmo2").string(), {"cpu", "float32", ""});
  const auto& c = loaded.model->config();
  EXPECT_EQ(c.norm_placement, NormPlacement::SublayerOutput);
  EXPECT_EQ(c.qk_norm, QkNorm::Whole);
  EXPECT_TRUE(c.norm_gain_in_float32);  // Olmo2RMSNorm scales in float32, LlamaRMSNorm after the cast
  EXPECT_THAT(c.pe_components.at(0).params_json, HasSubstr("\"rope_theta\":20000"));
  EXPECT_THAT(describe(loaded), HasSubstr("norms on the sublayer outputs"));
}

// The analyses' q and k (Transformer::qk_projections, read by the probe, the frequency
// analyses and the recomputed maps) are the forward's hook_q / hook_k, q/k norm included.
TEST(ArchReference, QkProjectionsOfQkNormModelsAreTheForwardsQAndK) {
  for (const char* name : {"qwen3", "olmo2", "gemma3"}) {
    const Reference ref(name);
    const auto loaded = load_checkpoint(case_dir(name).string(), {"cpu", "float32", ""});
    const auto& model = *loaded.model;
    const auto& c = model.config();
    Captures captures;
    CaptureSink sink(CaptureSpec({"blocks.*.hook_resid_pre", "blocks.*.attn.hook_q", "blocks.*.attn.hook_k"}),
                     captures);
    c10::InferenceMode guard;
    model.forward(ref.ids(), sink, {}, {});
    for (int l = 0; l < c.n_layers; ++l) {
      const auto [q, k] = model.qk_projections(l, captures.find({HookKind::ResidPre, l}));
      const auto hook_q = captures.find({HookKind::Q, l}).transpose(1, 2);
      const auto hook_k = captures.find({HookKind::K, l}).transpose(1, 2).repeat_interleave(c.n_heads / c.n_kv_heads, 1);
      EXPECT_TRUE(torch::allclose(q, hook_q, 0, 1e-5)) << name << " layer " << l;
      EXPECT_TRUE(torch::allclose(k, hook_k, 0, 1e-5)) << name << " layer " << l;
    }
  }
}

/// The qwen3 case's config.json with `key` set to `value`.
fs::path qwen3_with(const std::string& key, const nlohmann::json& value) {
  return case_with("qwen3", key, [&](nlohmann::json& j) { j[key] = value; });
}

// Qwen3 with use_sliding_window (transformers 5.17): layers 2 and 3 (from max_window_layers 2)
// see the last 4 keys. Without layer_types (older configs) the same layers come from
// max_window_layers; a sliding layer without a window is an error.
TEST(ArchReference, Qwen3SlidingLayersFromMaxWindowLayers) {
  expect_parity("qwen3_sliding", case_dir("qwen3_sliding"));
  const auto loaded = load_checkpoint(case_dir("qwen3_sliding").string(), {"cpu", "float32", ""});
  EXPECT_EQ(layer_types_summary(loaded.model->config()), "global: 0-1; local 4: 2-3");
  const auto older = case_with("qwen3_sliding", "layer_types", [](nlohmann::json& j) { j.erase("layer_types"); });
  EXPECT_EQ(layer_types_summary(load_checkpoint(older.string(), {"cpu", "float32", ""}).model->config()),
            "global: 0-1; local 4: 2-3");
  const auto unused = qwen3_with("layer_types", {"full_attention", "sliding_attention"});
  EXPECT_THAT(load_error(unused), HasSubstr("Qwen3 layer_types lists sliding_attention layers but use_sliding_window "
                                            "is false (transformers would run them with full attention)"));
  const auto no_window = case_with("qwen3_sliding", "no-window", [](nlohmann::json& j) { j["sliding_window"] = nullptr; });
  EXPECT_THAT(load_error(no_window), HasSubstr("Qwen3 sliding_attention layers need a positive sliding_window"));
}

// Qwen2 with use_sliding_window (transformers 5.17, tools/make_arch_reference_recent.py): the
// windows Qwen2Config derives exactly as Qwen3's — layers 2 and 3 from max_window_layers 2 — with
// Qwen2's q/k/v biases; without use_sliding_window the same weights see every key.
TEST(ArchReference, Qwen2SlidingLayersFromMaxWindowLayers) {
  expect_parity("qwen2_sliding", case_dir("qwen2_sliding"));
  const auto loaded = load_checkpoint(case_dir("qwen2_sliding").string(), {"cpu", "float32", ""});
  EXPECT_EQ(layer_types_summary(loaded.model->config()), "global: 0-1; local 4: 2-3");
  EXPECT_TRUE(loaded.model->config().qkv_bias);
  const auto older = case_with("qwen2_sliding", "layer_types", [](nlohmann::json& j) { j.erase("layer_types"); });
  EXPECT_EQ(layer_types_summary(load_checkpoint(older.string(), {"cpu", "float32", ""}).model->config()),
            "global: 0-1; local 4: 2-3");
  const auto off = case_with("qwen2_sliding", "off", [](nlohmann::json& j) {
    j.erase("layer_types");
    j["use_sliding_window"] = false;
  });
  const auto full = load_checkpoint(off.string(), {"cpu", "float32", ""});
  EXPECT_TRUE(full.model->config().layer_schemes.empty());
  const Reference ref("qwen2_sliding");
  c10::InferenceMode guard;
  const auto logits = full.model->forward(ref.ids());
  EXPECT_GT((logits - ref["logits"]).abs().max().item<float>(), 1e-2);  // the window mattered
  EXPECT_TRUE(torch::allclose(logits.narrow(1, 0, 4), ref["logits"].narrow(1, 0, 4), 0, 1e-4));
}

TEST(ArchReference, Qwen3ScalingInRopeParametersIsRead) {
  const auto linear = qwen3_with("rope_parameters", {{"rope_type", "linear"}, {"factor", 2.0}, {"rope_theta", 50000.0}});
  const auto loaded = load_checkpoint(linear.string(), {"cpu", "float32", ""});
  EXPECT_THAT(loaded.model->config().pe_components.at(0).params_json, HasSubstr("\"rope_type\":\"linear\""));
  EXPECT_THAT(loaded.model->position_encoding().describe(), HasSubstr("linear"));
}

// Gemma 3 text (transformers 5.17, make_arch_reference_recent.py): layers 0-4 local (a window
// of 4 keys, RoPE base 100), layer 5 global (base 10000, linear ×2), q/k RMSNorm per head,
// sandwich norms, query_pre_attn_scalar 10.
TEST(ArchReference, Gemma3LocalAndGlobalLayersWithTheirOwnRopeBases) {
  expect_parity("gemma3", case_dir("gemma3"));
  const auto loaded = load_checkpoint(case_dir("gemma3").string(), {"cpu", "float32", ""});
  const auto& model = *loaded.model;
  const auto& c = model.config();
  ASSERT_EQ(c.layer_schemes.size(), 6u);
  EXPECT_EQ(c.layer_type(0), "local 4");
  EXPECT_EQ(c.layer_type(5), "global");
  EXPECT_EQ(layer_types_summary(c), "local 4: 0-4; global: 5");
  EXPECT_EQ(model.layer_config(2).sliding_window, 4);
  EXPECT_EQ(model.layer_config(5).sliding_window, 0);
  EXPECT_THAT(model.position_encoding(0).describe(), HasSubstr("rope_theta=100)"));
  EXPECT_THAT(model.position_encoding(5).describe(), HasSubstr("rope_theta=10000, rope_scaling=linear x2"));
  EXPECT_NEAR(c.attention_scale(), 1.0 / std::sqrt(10.0), 1e-12);
  EXPECT_THAT(describe(loaded), HasSubstr("layer types:       local 4: 0-4; global: 5"));
  EXPECT_THAT(describe(loaded), HasSubstr("sandwich norms"));
  EXPECT_THAT(c.to_json(), HasSubstr(R"("layer_types":["local 4","local 4","local 4","local 4","local 4","global"])"));
}

// The Hub's Gemma 3 configs predate layer_types and rope_parameters: sliding_window_pattern,
// rope_local_base_freq, rope_theta and rope_scaling say the same thing.
TEST(ArchReference, Gemma3HubConfigWithoutLayerTypesLoadsTheSameModel) {
  const auto dir = case_with("gemma3", "hub", [](nlohmann::json& j) {
    j.erase("layer_types");
    j.erase("rope_parameters");
    j.erase("_sliding_window_pattern");
    j["sliding_window_pattern"] = 6;
    j["rope_local_base_freq"] = 100.0;
    j["rope_theta"] = 10000.0;
    j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}};
  });
  expect_parity("gemma3", dir);
  const auto capped = case_with("gemma3", "softcap", [](nlohmann::json& j) { j["attn_logit_softcapping"] = 50.0; });
  EXPECT_DOUBLE_EQ(load_checkpoint(capped.string(), {"cpu", "float32", ""}).model->config().attn_logit_softcap, 50.0);
  const auto short_types = case_with("gemma3", "types", [](nlohmann::json& j) { j["layer_types"] = {"full_attention"}; });
  EXPECT_THAT(load_error(short_types), HasSubstr("layer_types has 1 entries for 6 layers"));
}

// Gemma 2 (transformers 5.17): local (window 4) and global layers alternating with one RoPE base;
// attention logits capped at 5, output logits at 3 (the reference's logits reach 2.999).
TEST(ArchReference, Gemma2SoftCappingAndAlternatingLayers) {
  expect_parity("gemma2", case_dir("gemma2"));
  const auto loaded = load_checkpoint(case_dir("gemma2").string(), {"cpu", "float32", ""});
  const auto& c = loaded.model->config();
  EXPECT_EQ(layer_types_summary(c), "local 4: 0, 2; global: 1, 3");
  EXPECT_DOUBLE_EQ(c.attn_logit_softcap, 5.0);
  EXPECT_DOUBLE_EQ(c.final_logit_softcap, 3.0);
  EXPECT_THAT(describe(loaded), HasSubstr("attention logits soft-capped at 5, output logits at 3"));
  EXPECT_EQ(loaded.model->position_encoding(0).describe(), loaded.model->position_encoding(1).describe());
}

// Cohere 2 (transformers 5.17): layers 0-2 local with interleaved RoPE, layer 3 global without any
// position encoding; one LayerNorm feeding the parallel block; logit_scale 0.25.
TEST(ArchReference, Cohere2LocalRopeLayersAndAGlobalNopeLayer) {
  expect_parity("cohere2", case_dir("cohere2"));
  const auto loaded = load_checkpoint(case_dir("cohere2").string(), {"cpu", "float32", ""});
  const auto& model = *loaded.model;
  EXPECT_EQ(layer_types_summary(model.config()), "local 4: 0-2; NoPE: 3");
  EXPECT_THAT(model.position_encoding(0).describe(), HasSubstr("interleaved pairs, rope_theta=1000)"));
  EXPECT_FALSE(model.position_encoding(3).rotates());
  EXPECT_EQ(model.layer_config(3).sliding_window, 0);
}

/// Each token's top-2 experts, recomputed from PosLens's own hook_resid_mid and router, equal
/// the reference's router_top.{l} (HF's router choice, sorted).
void expect_routed_as_hf(const Reference& ref, const Transformer& model) {
  const auto& c = model.config();
  Captures captures;
  CaptureSink sink(CaptureSpec({"blocks.*.hook_resid_mid"}), captures);
  c10::InferenceMode guard;
  model.forward(ref.ids(), sink);
  for (int l = 0; l < c.n_layers; ++l) {
    const auto& w = model.weights().layers[static_cast<size_t>(l)];
    if (model.layer_config(l).mlp != MlpType::MoE) {  // Llama 4 Maverick's dense layers: no router
      EXPECT_FALSE(w.router.defined()) << "layer " << l;
      continue;
    }
    const auto h = blocks::norm(c, captures.find({HookKind::ResidMid, l}), w.mlp_norm, w.mlp_norm_bias)[0];
    const auto top = std::get<0>(std::get<1>(at::linear(h, w.router).topk(2, -1)).sort(-1));
    EXPECT_TRUE(top.equal(ref.ids("router_top." + std::to_string(l)))) << "layer " << l;
  }
}

// gpt-oss (transformers 5.17): layers 0, 2 local (window 4), 1, 3 full; a learned sink per head
// (rows of the reference's patterns sum to 0.25-0.96); YaRN; q/k/v/o biases; 4 experts, top 2,
// the clamped SwiGLU active (gate_up drawn wide).
TEST(ArchReference, GptOssSinksAlternatingWindowsYarnAndExperts) {
  expect_parity("gpt_oss", case_dir("gpt_oss"));
  const auto loaded = load_checkpoint(case_dir("gpt_oss").string(), {"cpu", "float32", ""});
  const auto& c = loaded.model->config();
  EXPECT_EQ(layer_types_summary(c), "local 4: 0, 2; global: 1, 3");
  EXPECT_TRUE(c.attention_sinks);
  EXPECT_TRUE(c.norm_gain_in_float32);  // GptOssRMSNorm scales in float32
  EXPECT_EQ(c.mlp, MlpType::MoE);
  EXPECT_EQ(c.n_experts, 4);
  EXPECT_EQ(c.n_experts_per_token, 2);
  EXPECT_THAT(loaded.model->position_encoding(0).describe(), HasSubstr("yarn"));
  const auto text = describe(loaded);
  EXPECT_THAT(text, HasSubstr("learned attention sink per head"));
  EXPECT_THAT(text, HasSubstr("4 experts, top 2"));
  const Reference ref("gpt_oss");
  EXPECT_LT(ref["attentions.1"].sum(-1).min().item<float>(), 0.5f);  // the sink takes mass
}

// gpt-oss as the Hub ships it (transformers 5.17): the experts MXFP4-quantised
// (`mlp.experts.*_blocks` / `*_scales`, quantization_config mxfp4), dequantised on load to what
// HF's convert_moe_packed_tensors makes; the reference is HF's float32 model on those weights
// (the generator checked from_pretrained's own CPU dequantisation gives the same weights).
TEST(ArchReference, GptOssMxfp4ExpertsDequantisedOnLoad) {
  expect_parity("gpt_oss_mxfp4", case_dir("gpt_oss_mxfp4"));
  const auto loaded = load_checkpoint(case_dir("gpt_oss_mxfp4").string(), {"cpu", "float32", ""});
  EXPECT_THAT(loaded.stored_dtype, HasSubstr("MXFP4 experts, dequantised"));
  const auto& w = loaded.model->weights().layers[0];
  EXPECT_EQ(w.experts_gate_up.sizes(), (std::vector<int64_t>{4, 64, 64}));  // [E, d_model, 2·d_mlp]
  EXPECT_EQ(w.experts_down.sizes(), (std::vector<int64_t>{4, 32, 64}));     // [E, d_mlp, d_model]
#if TORCH_VERSION_MAJOR >= 2  // laid out as nn.Linear's [out, in] rows (weight_table.cpp)
  EXPECT_EQ(w.experts_gate_up.stride(1), 1);
  EXPECT_EQ(w.experts_down.stride(1), 1);
#else
  EXPECT_TRUE(w.experts_gate_up.is_contiguous());
#endif
  // Every weight an FP4 code times a power of two: at most 2 significant bits.
  const auto v = w.experts_down.abs().flatten();
  const auto nonzero = v.index({v.gt(0)});
  const auto mantissa = nonzero / torch::pow(2.0, torch::floor(torch::log2(nonzero)));
  EXPECT_TRUE(mantissa.eq(1.0).logical_or(mantissa.eq(1.5)).all().item<bool>());
}

// Mixtral (transformers 5.17): Mistral's block with 4 experts stored one tensor each
// (block_sparse_moe.experts.{e}.w1/w2/w3), top 2 by a router without bias, gated SiLU experts;
// a sliding window of 6 < T = 13. Each token goes to the experts HF's router chose for it.
TEST(ArchReference, MixtralExpertsStoredPerTensorAndRoutedAsHf) {
  expect_parity("mixtral", case_dir("mixtral"));
  const auto loaded = load_checkpoint(case_dir("mixtral").string(), {"cpu", "float32", ""});
  const auto& model = *loaded.model;
  const auto& c = model.config();
  EXPECT_EQ(c.mlp, MlpType::MoE);
  EXPECT_EQ(c.expert_activation, ExpertActivation::Gated);
  EXPECT_EQ(c.n_experts, 4);
  EXPECT_EQ(c.n_experts_per_token, 2);
  EXPECT_EQ(c.sliding_window, 6);
  EXPECT_THAT(describe(loaded), HasSubstr("mixture-of-experts MLP (4 experts, top 2, gated silu)"));
  // Routing compared exactly: in the reference every token's 2nd and 3rd router logits lie at
  // least 0.029 apart (layer 0; 0.068 in layer 1), far beyond float32 rounding across thread
  // counts and summation orders.
  const Reference ref("mixtral");
  expect_routed_as_hf(ref, model);
  c10::InferenceMode guard;
  // A config naming more experts than the file holds names the first one missing; fewer fails
  // on the router's shape.
  const auto more = case_with("mixtral", "5-experts", [](nlohmann::json& j) { j["num_local_experts"] = 5; });
  EXPECT_THAT(load_error(more), HasSubstr("missing tensor model.layers.0.block_sparse_moe.experts.4.w1.weight"));
  const auto fewer = case_with("mixtral", "3-experts", [](nlohmann::json& j) { j["num_local_experts"] = 3; });
  EXPECT_THAT(load_error(fewer),
              HasSubstr("expected [3, 32], got [4, 32] for model.layers.0.block_sparse_moe.gate.weight"));
}

// Llama 4's text stack (transformers 5.17): layers 0-2 RoPE (interleaved pairs, llama3 scaling)
// in chunks of 5 keys with q/k L2 norm, layer 3 NoPE over every key with attention temperature
// tuning (floor 4: rows from #3 on sharpened); every layer 4 experts, top 2, sigmoid scores on
// the experts' inputs, and a shared expert. Routing exact: the reference's 2nd and 3rd router
// logits lie at least 0.045 apart in every layer.
TEST(ArchReference, Llama4ChunkedRopeLayersNopeLayerWithTemperatureAndSharedExpert) {
  expect_parity("llama4", case_dir("llama4"));
  const auto loaded = load_checkpoint(case_dir("llama4").string(), {"cpu", "float32", ""});
  const auto& model = *loaded.model;
  const auto& c = model.config();
  EXPECT_EQ(layer_types_summary(c), "chunked 5: 0-2; NoPE: 3");
  EXPECT_THAT(model.position_encoding(0).describe(), HasSubstr("interleaved pairs"));
  EXPECT_THAT(model.position_encoding(0).describe(), HasSubstr("llama3"));
  EXPECT_FALSE(model.position_encoding(3).rotates());
  EXPECT_EQ(model.layer_config(0).qk_norm, QkNorm::L2);
  EXPECT_EQ(model.layer_config(3).qk_norm, QkNorm::None);
  EXPECT_EQ(model.layer_config(0).attn_temperature_scale, 0.0);
  EXPECT_EQ(model.layer_config(3).attn_temperature_scale, 0.1);
  EXPECT_EQ(model.layer_config(3).attention_chunk_size, 0);
  const auto text = describe(loaded);
  EXPECT_THAT(text, HasSubstr("4 experts, top 2, gated silu, sigmoid-weighted inputs, a shared expert"));
  EXPECT_THAT(text, HasSubstr("q/k L2-normalised per head (no gain) on 3 of 4 layers"));
  EXPECT_THAT(text, HasSubstr("floor((i + 1) / 4)) on 1 of 4 layers"));
  // Row 6 of a chunked layer sees keys 5 and 6 (its chunk [5, 10)); row 5 only itself.
  const auto allowed = allowed_keys(model.layer_config(0), 13, torch::kCPU);
  EXPECT_TRUE(allowed[6].equal(torch::arange(13).ge(5).logical_and(torch::arange(13).le(6))));
  EXPECT_EQ(allowed[5].sum().item<int64_t>(), 1);
  const Reference ref("llama4");
  expect_routed_as_hf(ref, model);
  c10::InferenceMode guard;
  // Each of the three recipes moves the logits: without it the reference is missed.
  Captures none;
  CaptureSink nothing(CaptureSpec(), none);
  for (const char* key : {"attn_temperature_tuning", "use_qk_norm"}) {
    const auto off = case_with("llama4", std::string("no-") + key, [&](nlohmann::json& j) { j[key] = false; });
    const auto logits = load_checkpoint(off.string(), {"cpu", "float32", ""}).model->forward(ref.ids(), nothing).cpu();
    EXPECT_GT((logits - ref["logits"]).abs().max().item<float>(), 1e-3) << key;
  }
  const auto unchunked = case_with("llama4", "no-chunks", [](nlohmann::json& j) {
    j["layer_types"] = {"full_attention", "full_attention", "full_attention", "full_attention"};
  });
  const auto full = load_checkpoint(unchunked.string(), {"cpu", "float32", ""}).model->forward(ref.ids(), nothing).cpu();
  EXPECT_GT((full - ref["logits"]).abs().max().item<float>(), 1e-3);
  // Maverick's interleaving on this all-MoE file: its dense layers' MLP is not there.
  const auto maverick = case_with("llama4", "interleaved-moe", [](nlohmann::json& j) {
    j["interleave_moe_layer_step"] = 2;
    j.erase("moe_layers");
  });
  EXPECT_THAT(load_error(maverick), HasSubstr("missing tensor model.layers.0.feed_forward.gate_proj.weight"));
}

// Llama 4 Maverick's interleaving (transformers 5.17, interleave_moe_layer_step 2): layers 1 and
// 3 mixtures of experts (d_mlp 24, a shared expert), layers 0 and 2 dense gated SiLU MLPs 40 wide
// (intermediate_size_mlp, HF Llama4TextMLP); iRoPE as in llama4. Routing exact on the MoE layers.
TEST(ArchReference, Llama4MaverickDenseLayersBetweenMoeLayers) {
  expect_parity("llama4_maverick", case_dir("llama4_maverick"));
  const auto loaded = load_checkpoint(case_dir("llama4_maverick").string(), {"cpu", "float32", ""});
  const auto& model = *loaded.model;
  EXPECT_EQ(layer_types_summary(model.config()), "chunked 5: 0-2; NoPE: 3");
  for (const int l : {0, 2}) {
    EXPECT_EQ(model.layer_config(l).mlp, MlpType::Gated) << l;
    EXPECT_EQ(model.layer_config(l).d_mlp, 40) << l;
    EXPECT_EQ(model.weights().layers[static_cast<size_t>(l)].w_up.sizes(), (std::vector<int64_t>{40, 32})) << l;
  }
  for (const int l : {1, 3}) {
    EXPECT_EQ(model.layer_config(l).mlp, MlpType::MoE) << l;
    EXPECT_EQ(model.weights().layers[static_cast<size_t>(l)].w_up.sizes(), (std::vector<int64_t>{24, 32})) << l;
  }
  const auto text = describe(loaded);
  EXPECT_THAT(text, HasSubstr("d_mlp:             24, 40 on the dense layers 0, 2\n"));
  EXPECT_THAT(text, HasSubstr("a shared expert) on 2 of 4 layers, a dense gated MLP on the others"));
  EXPECT_THAT(model.config().to_json(), HasSubstr("\"dense_mlp_width\":40"));
  expect_routed_as_hf(Reference("llama4_maverick"), model);
  // The same layers from the step alone (Llama4TextConfig's default moe_layers).
  const auto by_step = case_with("llama4_maverick", "step-only", [](nlohmann::json& j) { j.erase("moe_layers"); });
  expect_parity("llama4_maverick", by_step);
  // moe_layers naming a dense layer finds no router there; an index past the layers is refused.
  const auto swapped = case_with("llama4_maverick", "moe-0-3", [](nlohmann::json& j) { j["moe_layers"] = {0, 3}; });
  EXPECT_THAT(load_error(swapped), HasSubstr("missing tensor model.layers.0.feed_forward.router.weight"));
  const auto outside = case_with("llama4_maverick", "moe-1-4", [](nlohmann::json& j) { j["moe_layers"] = {1, 4}; });
  EXPECT_THAT(load_error(outside), HasSubstr("moe_layers entry 4 is not a layer index below 4"));
  // The dense layers' width is read: a wrong intermediate_size_mlp misses their tensors' shape.
  const auto narrow = case_with("llama4_maverick", "mlp-32", [](nlohmann::json& j) { j["intermediate_size_mlp"] = 32; });
  EXPECT_THAT(load_error(narrow),
              HasSubstr("expected [32, 32], got [40, 32] for model.layers.0.feed_forward.gate_proj.weight"));
}

// Llama 4 as the Hub ships it (Llama4ForConditionalGeneration): the llama4 case's text stack
// under `language_model.` with its config in `text_config`, beside a vision tower and projector
// the text-only forward never reads. Same outputs as HF's conditional model (= the llama4 case).
TEST(ArchReference, Llama4ConditionalGenerationRunsItsTextStack) {
  expect_parity("llama4_multimodal", case_dir("llama4_multimodal"));
  const auto loaded = load_checkpoint(case_dir("llama4_multimodal").string(), {"cpu", "float32", ""});
  const auto text_only = load_checkpoint(case_dir("llama4").string(), {"cpu", "float32", ""});
  EXPECT_EQ(loaded.model->config().architecture, "Llama4ForConditionalGeneration");
  EXPECT_EQ(layer_types_summary(loaded.model->config()), "chunked 5: 0-2; NoPE: 3");
  EXPECT_THAT(describe(loaded), HasSubstr("\n  layers 0, 1, 2: RoPE (interleaved pairs"));
  EXPECT_THAT(describe(loaded), HasSubstr("\n  layer 3: NoPE"));
  // Only the text stack is loaded: the vision tower's 36 tensors are known and left in the file.
  EXPECT_EQ(parameter_count(loaded.model->weights()), parameter_count(text_only.model->weights()));
  expect_routed_as_hf(Reference("llama4_multimodal"), *loaded.model);
  const auto bare = case_with("llama4_multimodal", "no-text-config", [](nlohmann::json& j) { j.erase("text_config"); });
  EXPECT_THAT(load_error(bare), HasSubstr("Llama4ForConditionalGeneration needs a \"text_config\" object"));
  // The text stack's tensors are looked for under language_model.: a text-only file is refused.
  const auto unprefixed = case_with("llama4", "as-conditional", [](nlohmann::json& j) {
    j = {{"architectures", {"Llama4ForConditionalGeneration"}}, {"model_type", "llama4"}, {"text_config", j}};
  });
  EXPECT_THAT(load_error(unprefixed), HasSubstr("missing tensor language_model.model.layers."));
}

// ModernBERT (transformers 5.17): bidirectional; layers 0 and 3 global (RoPE base 5000), 1 and
// 2 local with |i − j| ≤ 2 (base 100); layer 0 without an attention norm; GeGLU from one Wi;
// the MLM head and the tied decoder with its bias.
TEST(ArchReference, ModernBertLocalWindowsBothWaysAndGlobalLayers) {
  expect_parity("modernbert", case_dir("modernbert"));
  const auto loaded = load_checkpoint(case_dir("modernbert").string(), {"cpu", "float32", ""});
  const auto& model = *loaded.model;
  EXPECT_EQ(layer_types_summary(model.config()), "global: 0, 3; local ±2: 1-2");
  EXPECT_FALSE(model.config().predicts_next_token());
  EXPECT_THAT(model.position_encoding(0).describe(), HasSubstr("rope_theta=5000"));
  EXPECT_THAT(model.position_encoding(1).describe(), HasSubstr("rope_theta=100)"));
  // The window reaches both ways: row 6 of a local layer sees keys 4..8.
  const auto allowed = allowed_keys(model.layer_config(1), 13, torch::kCPU);
  EXPECT_TRUE(allowed[6].equal(torch::arange(13).sub(6).abs().le(2)));
  // Older configs: no layer_types, global_attn_every_n_layers 3 from layer 0.
  const auto older = case_with("modernbert", "no-layer-types", [](nlohmann::json& j) { j.erase("layer_types"); });
  EXPECT_EQ(layer_types_summary(load_checkpoint(older.string(), {"cpu", "float32", ""}).model->config()),
            "global: 0, 3; local ±2: 1-2");
  const auto biased = case_with("modernbert", "norm-bias", [](nlohmann::json& j) { j["norm_bias"] = true; });
  EXPECT_THAT(load_error(biased), HasSubstr("norm_bias true is not supported for ModernBERT"));
}

// SmolLM3 (transformers 5.17): RoPE on layers 0-2, none on layer 3 (no_rope_layers [1,1,1,0]).
TEST(ArchReference, SmolLM3NopeLayerBesideRopeLayers) {
  expect_parity("smollm3", case_dir("smollm3"));
  const auto loaded = load_checkpoint(case_dir("smollm3").string(), {"cpu", "float32", ""});
  const auto& model = *loaded.model;
  EXPECT_EQ(layer_types_summary(model.config()), "global: 0-2; NoPE: 3");
  EXPECT_TRUE(model.position_encoding(0).rotates());
  EXPECT_FALSE(model.position_encoding(3).rotates());
  EXPECT_TRUE(model.position_encoding().rotates());  // the model's (global layers') encoding
  // The NoPE layer has no rotated q/k hooks; the RoPE layers have them.
  const auto points = model.hook_points();
  const auto has = [&](HookKind kind, int layer) {
    return std::any_of(points.begin(), points.end(), [&](const HookPoint& p) { return p.kind == kind && p.layer == layer; });
  };
  EXPECT_TRUE(has(HookKind::RotQ, 2));
  EXPECT_FALSE(has(HookKind::RotQ, 3));
  EXPECT_TRUE(has(HookKind::Pattern, 3));
  EXPECT_THROW(model.position_encoding(4), Error);
}

// Phi-3 (transformers 5.17): fused qkv_proj with GQA 4/2 (unequal parts) and gate_up_proj;
// LongRoPE on 6 of 8 dims per head — the short factors at T = 13 ≤ 16, the long ones and a
// sliding window of 10 at T = 24 — with the attention factor sqrt(1 + ln 4 / ln 16).
TEST(ArchReference, Phi3LongRopeShortAndLongFactorsAndFusedProjections) {
  expect_parity("phi3", case_dir("phi3"));
  expect_parity("phi3_long", case_dir("phi3_long"));
  const auto loaded = load_checkpoint(case_dir("phi3_long").string(), {"cpu", "float32", ""});
  const auto& model = *loaded.model;
  EXPECT_EQ(model.config().architecture, "Phi3ForCausalLM");
  EXPECT_EQ(model.config().sliding_window, 10);
  EXPECT_EQ(model.config().n_kv_heads, 2);
  EXPECT_THAT(model.position_encoding().describe(), HasSubstr("longrope"));
  // Each rotary pair's own factor: θ_c / short_factor[c] up to 16 tokens, / long_factor[c] beyond.
  const auto short_theta = model.position_encoding().rotary_info(16)->theta;
  const auto long_theta = model.position_encoding().rotary_info(24)->theta;
  ASSERT_EQ(short_theta.size(0), 3);
  const auto base = torch::pow(500.0, -torch::arange(0, 6, 2, torch::kDouble) / 6.0);
  EXPECT_TRUE(torch::allclose(short_theta, base / torch::tensor({1.0, 1.5, 2.5}, torch::kDouble), 1e-12, 0));
  EXPECT_TRUE(torch::allclose(long_theta, base / torch::tensor({1.2, 3.0, 7.0}, torch::kDouble), 1e-12, 0));
  // Phi-3's own configs: rope_scaling of type "su", original_max_position_embeddings and
  // partial_rotary_factor at the top level.
  const auto hub = case_with("phi3_long", "hub-spelling", [](nlohmann::json& j) {
    auto r = j["rope_parameters"];
    j.erase("rope_parameters");
    j["rope_theta"] = r["rope_theta"];
    j["partial_rotary_factor"] = r["partial_rotary_factor"];
    j["rope_scaling"] = {{"type", "su"}, {"short_factor", r["short_factor"]}, {"long_factor", r["long_factor"]}};
  });
  expect_parity("phi3_long", hub);
}

// Per-layer windows, chunks, encodings and head sizes hold in small attention blocks too
// (POSLENS_ATTENTION_BLOCKS=3,5: windows and chunks cut across query blocks and key chunks).
TEST(ArchReference, PerLayerSchemesInSmallAttentionBlocks) {
  for (const char* name : {"gemma2", "gemma3", "smollm3", "cohere2", "gpt_oss", "gpt_oss_mxfp4", "qwen3_sliding", "modernbert", "phi3_long", "mixtral",
                           "llama4", "llama4_maverick", "llama4_multimodal", "deepseek_v2", "deepseek_v3",
                           "gemma4", "gemma4_dense", "gemma4_moe", "gemma4_multimodal"}) {
    const Reference ref(name);
    const auto loaded = load_checkpoint(case_dir(name).string(), {"cpu", "float32", ""});
    Captures captures;
    CaptureSink sink(CaptureSpec({"blocks.*.attn.hook_pattern"}), captures);
    ForwardOptions options;
    options.blocking.query_rows = 3;
    options.blocking.key_chunk = 5;
    c10::InferenceMode guard;
    const auto logits = loaded.model->forward(ref.ids(), sink, {}, options).cpu();
    EXPECT_TRUE(torch::allclose(logits, ref["logits"], 0, 1e-4)) << name;
    for (int l = 0; l < loaded.model->config().n_layers; ++l)
      EXPECT_TRUE(torch::allclose(captures.find({HookKind::Pattern, l}).cpu(), ref["attentions." + std::to_string(l)], 0, 1e-5))
          << name << " layer " << l;
  }
}

}  // namespace
}  // namespace poslens
