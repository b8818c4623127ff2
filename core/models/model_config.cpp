#include "core/models/model_config.h"

#include "core/models/poslens_model.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/base/error.h"

namespace poslens {

const char* to_string(NormType v) { return v == NormType::RMSNorm ? "RMSNorm" : "LayerNorm"; }
const char* to_string(MlpType v) {
  return v == MlpType::Gated ? "gated" : v == MlpType::MoE ? "moe" : "plain";
}
const char* to_string(Activation v) {
  switch (v) {
    case Activation::SiLU: return "silu";
    case Activation::GeluNew: return "gelu_new";
    case Activation::GeluExact: return "gelu";
    case Activation::ReLU: return "relu";
  }
  return "?";
}
const char* to_string(QkNorm v) {
  switch (v) {
    case QkNorm::None: return "none";
    case QkNorm::PerHead: return "per_head";
    case QkNorm::Whole: return "whole";
    case QkNorm::L2: return "l2";
  }
  return "?";
}
const char* to_string(ExpertRouting v) {
  switch (v) {
    case ExpertRouting::Softmax: return "softmax of the top k";
    case ExpertRouting::SigmoidOnInput: return "sigmoid on the input";
    case ExpertRouting::SoftmaxAll: return "softmax over all experts";
    case ExpertRouting::SigmoidBiased: return "sigmoid, chosen with a bias";
    case ExpertRouting::ScaledSoftmaxAll: return "softmax over all experts of the normed, scaled input";
  }
  return "?";
}
const char* to_string(NormPlacement v) {
  switch (v) {
    case NormPlacement::Pre: return "pre";
    case NormPlacement::Post: return "post";
    case NormPlacement::SublayerOutput: return "sublayer_output";
    case NormPlacement::Sandwich: return "sandwich";
  }
  return "?";
}
void ModelConfig::validate() const {
  auto positive = [&](const char* name, int64_t value) {
    if (value <= 0)
      throw Error(architecture + " config: " + name + " must be positive, got " +
                  std::to_string(value));
  };
  positive("d_model", d_model);
  positive("n_layers", n_layers);
  positive("n_heads", n_heads);
  positive("n_kv_heads", n_kv_heads);
  positive("d_head", d_head);
  positive("d_mlp", d_mlp);
  positive("vocab_size", vocab_size);
  if (n_heads % n_kv_heads != 0)
    throw Error(architecture + " config: n_heads (" + std::to_string(n_heads) +
                ") is not a multiple of n_kv_heads (" + std::to_string(n_kv_heads) + ")");
  if (attn_scale < 0) throw Error(architecture + " config: attn_scale must not be negative");
  if (!(norm_eps > 0)) throw Error(architecture + " config: norm eps must be positive");
  if (type_vocab_size < 0) throw Error(architecture + " config: type_vocab_size must not be negative");
  if (clip_qkv < 0) throw Error(architecture + " config: clip_qkv must not be negative");
  if (attn_logit_softcap < 0 || final_logit_softcap < 0)
    throw Error(architecture + " config: a logit soft-cap must not be negative");
  if (mlp == MlpType::MoE && (n_experts < 1 || n_experts_per_token < 1 || n_experts_per_token > n_experts))
    throw Error(architecture + " config: a mixture of experts needs 1 <= n_experts_per_token (" +
                std::to_string(n_experts_per_token) + ") <= n_experts (" + std::to_string(n_experts) + ")");
  if (mlp == MlpType::MoE && (n_expert_groups < 1 || n_experts % n_expert_groups != 0 || topk_expert_groups < 1 ||
                              topk_expert_groups > n_expert_groups))
    throw Error(architecture + " config: " + std::to_string(n_experts) + " experts in " +
                std::to_string(n_expert_groups) + " groups, " + std::to_string(topk_expert_groups) +
                " of them chosen: the groups must divide the experts and 1 <= chosen <= groups");
  if (mlp == MlpType::MoE && n_expert_groups > 1 &&
      n_experts_per_token > topk_expert_groups * (n_experts / n_expert_groups))
    throw Error(architecture + " config: " + std::to_string(n_experts_per_token) + " experts per token cannot come from " +
                std::to_string(topk_expert_groups) + " groups of " + std::to_string(n_experts / n_expert_groups));
  if (!massive_means.empty() && static_cast<int64_t>(massive_means.size()) != d_model)
    throw Error(architecture + " config: " + std::to_string(massive_means.size()) + " massive-activation means for d_model " +
                std::to_string(d_model));
  if (shared_expert_width < 0) throw Error(architecture + " config: shared_expert_width must not be negative");
  if (experts_beside_mlp && (mlp != MlpType::MoE || !shared_expert || norm_placement != NormPlacement::Sandwich))
    throw Error(architecture + " config: experts beside the MLP need a mixture of experts with a shared expert and "
                "sandwich norms");
  if (v_head_dim < 0) throw Error(architecture + " config: v_head_dim must not be negative");
  if (latent_attention()) {
    if (q_lora_rank < 0 || qk_rope_head_dim < 2 || qk_rope_head_dim % 2 || qk_rope_head_dim > d_head)
      throw Error(architecture + " config: latent attention needs q_lora_rank >= 0 and an even qk_rope_head_dim in [2, "
                  "d_head] (got " + std::to_string(q_lora_rank) + ", " + std::to_string(qk_rope_head_dim) + ")");
    if (n_kv_heads != n_heads)
      throw Error(architecture + " config: latent attention gives every head its own key (n_kv_heads " +
                  std::to_string(n_kv_heads) + " != n_heads " + std::to_string(n_heads) + ")");
    if (encoder_decoder() || qk_norm != QkNorm::None || clip_qkv != 0.0)
      throw Error(architecture + " config: latent attention takes no encoder, q/k norm or clip_qkv");
  } else if (q_lora_rank != 0 || qk_rope_head_dim != 0) {
    throw Error(architecture + " config: q_lora_rank and qk_rope_head_dim need kv_lora_rank > 0");
  }
  if (n_encoder_layers < 0) throw Error(architecture + " config: n_encoder_layers must not be negative");
  if (!first_attn_norm && norm_placement != NormPlacement::Pre)
    throw Error(architecture + " config: only a pre-norm block can leave layer 0's attention norm out");
  if (norm_placement != NormPlacement::Pre && parallel_residual)
    throw Error(architecture + " config: only a pre-norm block can be parallel");
  if (!layer_schemes.empty()) {
    if (static_cast<int64_t>(layer_schemes.size()) != n_layers)
      throw Error(architecture + " config: " + std::to_string(layer_schemes.size()) + " layer schemes for " +
                  std::to_string(n_layers) + " layers");
    if (encoder_decoder())
      throw Error(architecture + " config: per-layer schemes are not supported in an encoder–decoder model");
    for (const auto& s : layer_schemes) {
      if (s.sliding_window < 0) throw Error(architecture + " config: a layer's sliding_window must not be negative");
      if (s.attention_chunk_size < 0)
        throw Error(architecture + " config: a layer's attention_chunk_size must not be negative");
      if (s.sliding_window > 0 && s.attention_chunk_size > 0)
        throw Error(architecture + " config: a layer cannot have both a sliding window and attention chunks");
      if (s.dense_mlp_width < 0) throw Error(architecture + " config: a layer's dense_mlp_width must not be negative");
    }
    for (int64_t l = 0; l < n_layers; ++l) {
      const auto c = layer_config(l);
      const std::string layer = architecture + " config: layer " + std::to_string(l);
      if (c.d_head <= 0 || c.n_kv_heads <= 0 || c.n_heads % c.n_kv_heads != 0)
        throw Error(layer + ": d_head " + std::to_string(c.d_head) + " and n_kv_heads " + std::to_string(c.n_kv_heads) +
                    " must be positive, n_heads a multiple of n_kv_heads");
      if (c.kv_source_layer < 0) continue;
      if (c.kv_source_layer >= l)
        throw Error(layer + " reuses the keys and values of layer " + std::to_string(c.kv_source_layer) +
                    ", which is not an earlier layer");
      const auto source = layer_config(c.kv_source_layer);
      if (source.kv_source_layer >= 0 || source.d_head != c.d_head || source.n_kv_heads != c.n_kv_heads)
        throw Error(layer + " reuses the keys and values of layer " + std::to_string(c.kv_source_layer) +
                    ", which has other head sizes or shares its own");
    }
  }
  if (attention_chunk_size < 0) throw Error(architecture + " config: attention_chunk_size must not be negative");
  if (sliding_window > 0 && attention_chunk_size > 0)
    throw Error(architecture + " config: sliding_window and attention_chunk_size cannot both be set");
  if (attn_temperature_scale < 0 || attn_temperature_floor < 1)
    throw Error(architecture + " config: attention temperature tuning needs a scale >= 0 and a floor >= 1 (got " +
                std::to_string(attn_temperature_scale) + ", " + std::to_string(attn_temperature_floor) + ")");
}

ModelConfig ModelConfig::layer_config(int64_t l) const {
  if (layer_schemes.empty()) return *this;
  const auto& s = layer_schemes.at(static_cast<size_t>(l));
  ModelConfig c = *this;
  c.layer_schemes.clear();
  c.sliding_window = s.sliding_window;
  c.attention_chunk_size = s.attention_chunk_size;
  c.pe_components = s.pe_components;
  if (!s.qk_norm) c.qk_norm = QkNorm::None;
  if (!s.attn_temperature) c.attn_temperature_scale = 0.0;
  if (s.d_head > 0) c.d_head = s.d_head;
  if (s.n_kv_heads > 0) c.n_kv_heads = s.n_kv_heads;
  c.values_from_keys = s.values_from_keys;
  c.kv_source_layer = s.kv_source_layer;
  if (s.dense_mlp_width > 0) {  // Llama 4 Maverick's, DeepSeek's dense layers among the MoE layers
    c.mlp = MlpType::Gated;
    c.d_mlp = s.dense_mlp_width;
    c.shared_expert = false;
    c.shared_expert_width = 0;
    c.experts_beside_mlp = false;
  }
  return c;
}

int64_t ModelConfig::dense_mlp_width(int64_t l) const {
  return layer_schemes.empty() ? 0 : layer_schemes.at(static_cast<size_t>(l)).dense_mlp_width;
}

int64_t ModelConfig::widest_mlp() const {
  int64_t widest = std::max(d_mlp, shared_expert ? shared_expert_width : 0);
  for (const auto& s : layer_schemes) widest = std::max(widest, s.dense_mlp_width);
  return widest;
}

int64_t ModelConfig::widest_head() const {
  int64_t widest = d_head;
  for (const auto& s : layer_schemes) widest = std::max(widest, s.d_head);
  return widest;
}

int64_t ModelConfig::most_kv_heads() const {
  int64_t most = n_kv_heads;
  for (const auto& s : layer_schemes) most = std::max(most, s.n_kv_heads);
  return most;
}

bool ModelConfig::per_layer_head_sizes() const {
  return std::any_of(layer_schemes.begin(), layer_schemes.end(), [&](const LayerScheme& s) {
    return (s.d_head > 0 && s.d_head != d_head) || (s.n_kv_heads > 0 && s.n_kv_heads != n_kv_heads);
  });
}

std::string ModelConfig::layer_type(int64_t l) const {
  const ModelConfig c = layer_config(l);
  const int64_t window = c.sliding_window;
  const bool nope = !layer_schemes.empty() && c.pe_components.empty();
  const bool both_sides = window_both_sides && !causal;
  std::string type = c.attention_chunk_size > 0 ? "chunked " + std::to_string(c.attention_chunk_size)
                     : window <= 0              ? std::string("global")
                     : both_sides               ? "local ±" + std::to_string(window - 1)
                                                : "local " + std::to_string(window);
  return nope ? (window > 0 ? "NoPE " + type : std::string("NoPE")) : type;
}

std::string layer_types_summary(const ModelConfig& c) {
  if (c.layer_schemes.empty()) return {};
  std::vector<std::string> layer_types;
  for (int64_t l = 0; l < c.n_layers; ++l) layer_types.push_back(c.layer_type(l));
  // Types in the order they first appear, each with its layers as runs "a-b".
  std::vector<std::pair<std::string, std::string>> types;
  for (size_t begin = 0, end = 0; begin < layer_types.size(); begin = end) {
    const auto& type = layer_types[begin];
    while (end < layer_types.size() && layer_types[end] == type) ++end;  // the run [begin, end)
    auto it = std::find_if(types.begin(), types.end(), [&](const auto& t) { return t.first == type; });
    if (it == types.end()) it = types.insert(types.end(), {type, ""});
    it->second += (it->second.empty() ? "" : ", ") + std::to_string(begin) +
                  (end - begin > 1 ? "-" + std::to_string(end - 1) : "");
  }
  std::string out;
  for (const auto& [type, layers] : types) out += (out.empty() ? "" : "; ") + type + ": " + layers;
  return out;
}

ModelConfig ModelConfig::encoder_config() const {
  if (!encoder_decoder()) return *this;
  ModelConfig e = *this;
  e.n_layers = n_encoder_layers;
  e.n_encoder_layers = 0;
  e.causal = false;
  return e;
}

ModelConfig ModelConfig::cross_attention_config() const {
  ModelConfig x = *this;
  x.causal = false;
  x.sliding_window = 0;
  return x;
}

PositionContext ModelConfig::position_context() const {
  return {d_model, n_heads, d_head, n_layers, n_ctx, causal};
}

double ModelConfig::attention_scale() const {
  return attn_scale != 0.0 ? attn_scale : 1.0 / std::sqrt(static_cast<double>(d_head));
}

std::string ModelConfig::to_json() const {
  // A PosLens-format model's own config.json: it loads again (poslens-cli info --json); an
  // intervened one (never saved as a checkpoint) also says what it runs with.
  if (architecture == "PosLens") {
    if (interventions.empty()) return poslens_config_json(*this);
    auto j = nlohmann::ordered_json::parse(poslens_config_json(*this));
    if (mask_first_key) j["mask_first_key"] = true;
    if (ablate_massive_activations) j["ablate_massive_activations"] = true;
    j["interventions"] = interventions;
    return j.dump();
  }
  nlohmann::ordered_json j;
  j["format"] = format;
  j["architecture"] = architecture;
  j["d_model"] = d_model;
  j["n_layers"] = n_layers;
  j["n_heads"] = n_heads;
  j["n_kv_heads"] = n_kv_heads;
  j["d_head"] = d_head;
  j["d_mlp"] = d_mlp;
  j["vocab_size"] = vocab_size;
  j["n_ctx"] = n_ctx;
  j["norm"] = to_string(norm);
  j["norm_eps"] = norm_eps;
  j["mlp"] = to_string(mlp);
  j["activation"] = to_string(activation);
  j["position_encoding"] = nlohmann::ordered_json::parse(components_json(pe_components));
  j["qkv_bias"] = qkv_bias;
  j["attn_out_bias"] = attn_out_bias;
  j["mlp_bias"] = mlp_bias;
  j["tie_word_embeddings"] = tie_word_embeddings;
  j["sliding_window"] = sliding_window;
  if (window_both_sides) j["window_both_sides"] = true;
  if (attention_chunk_size) j["attention_chunk_size"] = attention_chunk_size;
  if (attn_temperature_scale != 0.0) {
    j["attn_temperature_scale"] = attn_temperature_scale;
    j["attn_temperature_floor"] = attn_temperature_floor;
  }
  j["causal"] = causal;
  if (mask_first_key) j["mask_first_key"] = true;
  if (ablate_massive_activations) j["ablate_massive_activations"] = true;
  j["attn_scale"] = attention_scale();
  j["parallel_residual"] = parallel_residual;
  j["norm_placement"] = to_string(norm_placement);
  if (embed_norm) j["embed_norm"] = true;
  if (type_vocab_size) j["type_vocab_size"] = type_vocab_size;
  if (!final_norm) j["final_norm"] = false;
  if (!first_attn_norm) j["first_attn_norm"] = false;
  if (mlm_head) j["mlm_head"] = true;
  if (clip_qkv != 0.0) j["clip_qkv"] = clip_qkv;
  if (attn_logit_softcap != 0.0) j["attn_logit_softcap"] = attn_logit_softcap;
  if (final_logit_softcap != 0.0) j["final_logit_softcap"] = final_logit_softcap;
  if (qk_norm != QkNorm::None) j["qk_norm"] = to_string(qk_norm);
  if (attention_sinks) j["attention_sinks"] = true;
  if (!interventions.empty()) j["interventions"] = interventions;
  if (mlp == MlpType::MoE) {
    j["n_experts"] = n_experts;
    j["n_experts_per_token"] = n_experts_per_token;
    if (expert_activation == ExpertActivation::ClampedSwiGLU)
      j["swiglu_limit"] = swiglu_limit;
    else
      j["expert_activation"] = std::string("gated ") + to_string(activation);
    if (expert_routing != ExpertRouting::Softmax) j["expert_routing"] = to_string(expert_routing);
    if (n_expert_groups > 1) {
      j["n_expert_groups"] = n_expert_groups;
      j["topk_expert_groups"] = topk_expert_groups;
    }
    if (routed_scaling_factor != 1.0) j["routed_scaling_factor"] = routed_scaling_factor;
    if (norm_topk_prob) j["norm_topk_prob"] = true;
    if (shared_expert) j["shared_expert"] = true;
    if (shared_expert && shared_expert_width > 0) j["shared_expert_width"] = shared_expert_width;
    if (experts_beside_mlp) j["experts_beside_mlp"] = true;
  }
  if (latent_attention()) {
    j["q_lora_rank"] = q_lora_rank;
    j["kv_lora_rank"] = kv_lora_rank;
    j["qk_rope_head_dim"] = qk_rope_head_dim;
  }
  if (v_head_dim > 0) j["v_head_dim"] = v_head_dim;
  if (!layer_schemes.empty()) {
    auto& types = j["layer_types"] = nlohmann::ordered_json::array();
    auto& layers = j["layer_schemes"] = nlohmann::ordered_json::array();
    for (int64_t l = 0; l < n_layers; ++l) {
      const auto& s = layer_schemes[static_cast<size_t>(l)];
      types.push_back(layer_type(l));
      nlohmann::ordered_json layer = {
          {"sliding_window", s.sliding_window},
          {"position_encoding", nlohmann::ordered_json::parse(components_json(s.pe_components))}};
      if (s.attention_chunk_size) layer["attention_chunk_size"] = s.attention_chunk_size;
      if (!s.qk_norm && qk_norm != QkNorm::None) layer["qk_norm"] = false;
      if (!s.attn_temperature && attn_temperature_scale != 0.0) layer["attn_temperature"] = false;
      if (s.dense_mlp_width > 0) layer["dense_mlp_width"] = s.dense_mlp_width;
      if (s.d_head > 0) layer["d_head"] = s.d_head;
      if (s.n_kv_heads > 0) layer["n_kv_heads"] = s.n_kv_heads;
      if (s.values_from_keys) layer["values_from_keys"] = true;
      if (s.kv_source_layer >= 0) layer["kv_source_layer"] = s.kv_source_layer;
      layers.push_back(layer);
    }
  }
  if (encoder_decoder()) {
    j["n_encoder_layers"] = n_encoder_layers;
    j["decoder_start_token_id"] = decoder_start_token_id;
  }
  if (unembed_scale != 1.0) j["unembed_scale"] = unembed_scale;
  if (embed_scale != 1.0) j["embed_scale"] = embed_scale;
  if (norm_weight_offset != 0.0) j["norm_weight_offset"] = norm_weight_offset;
  if (norm_gain_in_float32) j["norm_gain_in_float32"] = true;
  if (v_norm) j["v_norm"] = true;
  if (per_layer_input_width > 0) {
    j["per_layer_input_width"] = per_layer_input_width;
    j["per_layer_input_vocab"] = per_layer_input_vocab;
  }
  if (layer_scalar) j["layer_scalar"] = true;
  j["bos_token_id"] = bos_token_id;
  return j.dump();
}

}  // namespace poslens
