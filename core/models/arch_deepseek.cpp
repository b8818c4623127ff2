// DeepSeek-V2 and -V3 (HF DeepseekV2ForCausalLM / DeepseekV3ForCausalLM, modeling_deepseek_v2 /
// _v3 of transformers 5.17; DeepSeek-AI 2024, "DeepSeek-V2", arXiv 2405.04434 §2.1–2.2, and
// "DeepSeek-V3 Technical Report", arXiv 2412.19437 §2.1); also the models built on V3's code
// (Moonlight, Kimi K2):
//  - multi-head latent attention (ModelConfig::latent_attention()): q from `q_proj`, or through
//    the low-rank `q_a_proj` → `q_a_layernorm` → `q_b_proj` (q_lora_rank); keys and values from
//    the latent `kv_a_proj_with_mqa` → `kv_a_layernorm` → `kv_b_proj` (kv_lora_rank), each head
//    qk_nope_head_dim no-position channels and one decoupled rotary key of qk_rope_head_dim
//    channels shared by every head; values v_head_dim wide;
//  - RoPE on the rotary channels only, interleaved pairs (V2's complex form; V3 with
//    `rope_interleave`, its default) or halves (V3 without), frequencies over qk_rope_head_dim;
//    YaRN by rope_scaling / rope_parameters, whose mscale_all_dim also sets the softmax scale
//    d_head^-1/2 · (0.1·mscale_all_dim·ln(factor) + 1)² (HF yarn_apply_mscale);
//  - RMSNorm pre-norm blocks; the first `first_k_dense_replace` layers a dense gated SiLU MLP
//    `intermediate_size` wide (LayerScheme::dense_mlp_width), the others a mixture of
//    `n_routed_experts` experts (moe_intermediate_size wide) with `n_shared_experts` shared ones
//    (one gated MLP n_shared_experts · moe_intermediate_size wide, every token);
//  - V2's routing softmax over all experts ("greedy", or "group_limited_greedy" over n_group
//    groups), V3's sigmoid chosen with `e_score_correction_bias` among topk_group of n_group
//    groups (ExpertRouting::SoftmaxAll / SigmoidBiased), times routed_scaling_factor.
// Tensors of the multi-token-prediction layers past num_hidden_layers (V3's layer 61) are known
// and not loaded, as HF does. FP8 block-quantised checkpoints (`weight_scale_inv`, DeepSeek-V3's
// own release) reach this table dequantised (core/formats/fp8.h, checkpoint loading).
#include "core/models/hf_config.h"
#include "core/formats/tensor_source.h"
#include "core/base/error.h"

#include <cmath>

namespace poslens::arch {

namespace {

/// HF yarn_apply_mscale: d_head^-1/2 times mscale(factor, mscale_all_dim)², mscale(s, m) =
/// 0.1·m·ln(s) + 1 for s > 1 (else 1), when the rope component's scaling (rope_component: the
/// config's rope_scaling, or its non-default rope_parameters) names a non-zero mscale_all_dim.
double softmax_scale(const PositionComponentSpec& rope, int64_t d_head, const std::string& where) {
  double scale = 1.0 / std::sqrt(static_cast<double>(d_head));
  const auto params = nlohmann::json::parse(rope.params_json);
  const auto s = params.find("rope_scaling");
  if (s == params.end() || !s->is_object()) return scale;
  const double all_dim = number_or(*s, "mscale_all_dim", 0.0, where + " rope scaling");
  const double factor = number_or(*s, "factor", 1.0, where + " rope scaling");
  if (all_dim != 0.0 && factor > 1.0) {
    const double m = 0.1 * all_dim * std::log(factor) + 1.0;
    scale *= m * m;
  }
  return scale;
}

/// The routing of `arch`'s experts from topk_method (V2) or the sigmoid router (V3).
void read_routing(const nlohmann::json& j, const std::string& arch, ModelConfig& c, const std::string& where) {
  const bool v3 = arch == "DeepseekV3ForCausalLM";
  c.routed_scaling_factor = number_or(j, "routed_scaling_factor", v3 ? 2.5 : 1.0, where);
  if (v3) {  // HF DeepseekV3TopkRouter whatever topk_method / scoring_func say (noaux_tc, sigmoid)
    c.expert_routing = ExpertRouting::SigmoidBiased;
    c.n_expert_groups = int_or(j, "n_group", 8, where);
    c.topk_expert_groups = int_or(j, "topk_group", 4, where);
    c.norm_topk_prob = bool_or(j, "norm_topk_prob", true, where);
    return;
  }
  c.expert_routing = ExpertRouting::SoftmaxAll;
  const auto t = j.find("topk_method");
  const std::string method = t != j.end() && t->is_string() ? t->get<std::string>() : "greedy";
  if (method == "group_limited_greedy") {
    c.n_expert_groups = int_or(j, "n_group", 1, where);
    c.topk_expert_groups = int_or(j, "topk_group", 1, where);
  } else if (method != "greedy") {
    throw Error(where + ": topk_method \"" + method + "\" is not supported for " + arch +
                " (supported: greedy, group_limited_greedy)");
  }
}

ModelConfig deepseek_config_from_hf(const nlohmann::json& j, const std::string& arch, const std::string& where) {
  const bool v3 = arch == "DeepseekV3ForCausalLM";
  ModelConfig c = hf_decoder_sizes(j, arch, v3 ? 4096 : 2048, where);
  c.norm = NormType::RMSNorm;
  c.norm_eps = number_or(j, "rms_norm_eps", 1e-6, where);
  const std::string act = j.value("hidden_act", std::string("silu"));
  if (act != "silu") throw Error(where + ": hidden_act \"" + act + "\" is not supported for " + arch + " (supported: silu)");
  c.activation = Activation::SiLU;
  if (bool_or(j, "attention_bias", false, where))
    throw Error(where + ": attention_bias true is not supported for " + arch + " (no released DeepSeek model has it)");
  c.tie_word_embeddings = bool_or(j, "tie_word_embeddings", false, where);
  c.bos_token_id = optional_token_id(j, "bos_token_id");

  // Multi-head latent attention: q_lora_rank null means a plain q_proj (V2-Lite).
  c.q_lora_rank = j.contains("q_lora_rank") && j["q_lora_rank"].is_null() ? 0 : int_or(j, "q_lora_rank", 1536, where);
  c.kv_lora_rank = int_or(j, "kv_lora_rank", 512, where);
  c.qk_rope_head_dim = int_or(j, "qk_rope_head_dim", 64, where);
  const int64_t nope = int_or(j, "qk_nope_head_dim", 128, where);
  c.v_head_dim = int_or(j, "v_head_dim", 128, where);
  if (c.kv_lora_rank < 1 || c.q_lora_rank < 0 || nope < 0 || c.v_head_dim < 1)
    throw Error(where + ": kv_lora_rank and v_head_dim must be positive, q_lora_rank and qk_nope_head_dim not negative");
  c.d_head = c.qk_rope_head_dim + nope;
  if (const int64_t kv = int_or(j, "num_key_value_heads", c.n_heads, where); kv != c.n_heads)
    throw Error(where + ": num_key_value_heads " + std::to_string(kv) + " differs from num_attention_heads " +
                std::to_string(c.n_heads) + " (latent attention gives every head its own key)");
  c.n_kv_heads = c.n_heads;
  const bool halves = v3 && !bool_or(j, "rope_interleave", true, where);
  c.pe_components = {rope_component(j, hf_rope_theta(j, 10000.0, where),
                                    halves ? RopePairing::HalfSplit : RopePairing::Interleaved, c.qk_rope_head_dim)};
  c.attn_scale = softmax_scale(c.pe_components[0], c.d_head, where);

  // MLP: dense on the first first_k_dense_replace layers, experts after.
  const int64_t dense_width = c.d_mlp;  // intermediate_size
  const int64_t first_moe = int_or(j, "first_k_dense_replace", v3 ? 3 : 0, where);
  const int64_t n_experts = j.contains("n_routed_experts") && j["n_routed_experts"].is_null()
                                ? 0 : int_or(j, "n_routed_experts", v3 ? 256 : 64, where);
  if (first_moe < 0) throw Error(where + ": first_k_dense_replace must not be negative");
  if (first_moe >= c.n_layers || n_experts == 0) return c;  // every layer dense: a gated MLP
  c.mlp = MlpType::MoE;
  c.expert_activation = ExpertActivation::Gated;
  c.n_experts = n_experts;
  c.n_experts_per_token = int_or(j, "num_experts_per_tok", v3 ? 8 : 6, where);
  c.d_mlp = int_or(j, "moe_intermediate_size", v3 ? 2048 : 1407, where);
  const int64_t shared = int_or(j, "n_shared_experts", v3 ? 1 : 2, where);
  if (shared < 1) throw Error(where + ": n_shared_experts must be at least 1 (HF builds the shared experts always)");
  c.shared_expert = true;
  c.shared_expert_width = shared * c.d_mlp;
  read_routing(j, arch, c, where);
  if (first_moe > 0)
    for (int64_t l = 0; l < c.n_layers; ++l) {
      LayerScheme s;
      s.pe_components = c.pe_components;
      s.dense_mlp_width = l < first_moe ? dense_width : 0;
      c.layer_schemes.push_back(s);
    }
  return c;
}

/// The attention's rules: q (plain or low-rank), the latent kv projections, o_proj.
std::vector<WeightRule> latent_attention_rules(const ModelConfig& c) {
  const std::string p = "model.layers.{L}.self_attn.";
  const int64_t q = c.n_heads * c.d_head, nope = c.d_head - c.qk_rope_head_dim;
  std::vector<WeightRule> rules;
  if (c.q_lora_rank > 0) {
    rules.push_back({p + "q_a_proj.weight", {c.q_lora_rank, c.d_model}, {&LayerWeights::w_q_a}});
    rules.push_back({p + "q_a_layernorm.weight", {c.q_lora_rank}, {&LayerWeights::q_a_norm}});
    rules.push_back({p + "q_b_proj.weight", {q, c.q_lora_rank}, {&LayerWeights::w_q}});
  } else {
    rules.push_back({p + "q_proj.weight", {q, c.d_model}, {&LayerWeights::w_q}});
  }
  rules.push_back({p + "kv_a_proj_with_mqa.weight", {c.kv_lora_rank + c.qk_rope_head_dim, c.d_model}, {&LayerWeights::w_kv_a}});
  rules.push_back({p + "kv_a_layernorm.weight", {c.kv_lora_rank}, {&LayerWeights::kv_a_norm}});
  rules.push_back({p + "kv_b_proj.weight", {c.n_heads * (nope + c.value_head_dim()), c.kv_lora_rank}, {&LayerWeights::w_kv_b}});
  rules.push_back({p + "o_proj.weight", {c.d_model, c.n_heads * c.value_head_dim()}, {&LayerWeights::w_o}});
  return rules;
}

bool has_tensor(const TensorSource& source, const std::string& name) {
  for (const auto& info : source.tensors())
    if (info.name == name) return true;
  return false;
}

WeightTable deepseek_hf_table(const ModelConfig& c, const TensorSource& source) {
  const std::string p = "model.layers.{L}.";
  const int64_t E = c.n_experts;
  std::vector<int64_t> moe, dense;
  for (int64_t l = 0; l < c.n_layers; ++l) (c.mlp == MlpType::MoE && c.dense_mlp_width(l) == 0 ? moe : dense).push_back(l);
  const int64_t dense_width = c.mlp == MlpType::MoE ? (dense.empty() ? 0 : c.dense_mlp_width(dense.front())) : c.d_mlp;
  WeightTable t;
  t.rules = {{"model.embed_tokens.weight", {c.vocab_size, c.d_model}, {}, &ModelWeights::tok_embed},
             {p + "input_layernorm.weight", {c.d_model}, {&LayerWeights::attn_norm}},
             {p + "post_attention_layernorm.weight", {c.d_model}, {&LayerWeights::mlp_norm}},
             {"model.norm.weight", {c.d_model}, {}, &ModelWeights::final_norm}};
  for (auto& rule : latent_attention_rules(c)) t.rules.push_back(std::move(rule));
  const auto on = [&](WeightRule rule, const std::vector<int64_t>& layers) {
    if (layers.empty()) return;  // an empty only_layers would mean every layer
    if (static_cast<int64_t>(layers.size()) < c.n_layers) rule.only_layers = layers;
    t.rules.push_back(std::move(rule));
  };
  on({p + "mlp.gate_proj.weight", {dense_width, c.d_model}, {&LayerWeights::w_gate}}, dense);
  on({p + "mlp.up_proj.weight", {dense_width, c.d_model}, {&LayerWeights::w_up}}, dense);
  on({p + "mlp.down_proj.weight", {c.d_model, dense_width}, {&LayerWeights::w_down}}, dense);
  if (!moe.empty()) {
    const int64_t shared = c.shared_expert_width;
    on({p + "mlp.gate.weight", {E, c.d_model}, {&LayerWeights::router}}, moe);
    if (c.expert_routing == ExpertRouting::SigmoidBiased)
      on({p + "mlp.gate.e_score_correction_bias", {E}, {&LayerWeights::router_score_bias}}, moe);
    on({p + "mlp.shared_experts.gate_proj.weight", {shared, c.d_model}, {&LayerWeights::w_gate}}, moe);
    on({p + "mlp.shared_experts.up_proj.weight", {shared, c.d_model}, {&LayerWeights::w_up}}, moe);
    on({p + "mlp.shared_experts.down_proj.weight", {c.d_model, shared}, {&LayerWeights::w_down}}, moe);
    // The Hub's files hold each expert apart (`experts.{E}.gate_proj.weight`); transformers 5
    // may write them fused (`experts.gate_up_proj`, [E, 2·d_mlp, d_model]).
    const bool fused = has_tensor(source, "model.layers." + std::to_string(moe.front()) + ".mlp.experts.gate_up_proj");
    WeightRule gate_up{p + (fused ? "mlp.experts.gate_up_proj" : "mlp.experts.{E}.{gate_proj,up_proj}.weight"),
                       fused ? std::vector<int64_t>{E, 2 * c.d_mlp, c.d_model} : std::vector<int64_t>{c.d_mlp, c.d_model},
                       {&LayerWeights::experts_gate_up}};
    gate_up.to_runtime = stacked_experts_gate_up;
    WeightRule down{p + (fused ? "mlp.experts.down_proj" : "mlp.experts.{E}.down_proj.weight"),
                    fused ? std::vector<int64_t>{E, c.d_model, c.d_mlp} : std::vector<int64_t>{c.d_model, c.d_mlp},
                    {&LayerWeights::experts_down}};
    down.to_runtime = stacked_experts_down;
    on(gate_up, moe);
    on(down, moe);
  }
  WeightRule lm_head{"lm_head.weight", {c.vocab_size, c.d_model}, {}, &ModelWeights::unembed};
  lm_head.optional = c.tie_word_embeddings;
  t.rules.push_back(lm_head);
  // The multi-token-prediction layers past the stack (HF ignores `model.layers.61.*` of V3).
  for (const auto& info : source.tensors()) {
    const std::string prefix = "model.layers.";
    if (info.name.rfind(prefix, 0) != 0) continue;
    const auto dot = info.name.find('.', prefix.size());
    const auto index = info.name.substr(prefix.size(), dot - prefix.size());
    if (!index.empty() && index.find_first_not_of("0123456789") == std::string::npos && index.size() < 9 &&
        std::stoll(index) >= c.n_layers)
      t.ignored.push_back(info.name);
  }
  return t;
}

}  // namespace

std::vector<ArchitectureEntry> deepseek_architectures() {
  const auto read = [](const nlohmann::json& j, const std::string& name, const std::string& where) {
    return deepseek_config_from_hf(j, name, where);
  };
  return {{"DeepseekV2ForCausalLM", {"deepseek_v2"}, read, deepseek_hf_table},
          {"DeepseekV3ForCausalLM", {"deepseek_v3"}, read, deepseek_hf_table}};
}

}  // namespace poslens::arch
