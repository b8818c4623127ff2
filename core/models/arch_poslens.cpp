// The PosLens model format (docs/poslens-format.md): config.json with "model_type": "poslens"
// naming the block and a list of position-encoding components, weights under one documented
// set of names. Block: x += o(attn(norm(x))); x += mlp(norm(x)).
#include <set>
#include <utility>
#include <vector>

#include "core/models/hf_config.h"
#include "core/base/error.h"
#include "core/position/components.h"

namespace poslens::arch {
namespace {

std::vector<PositionComponentSpec> components(const nlohmann::json& j, const std::string& where) {
  std::vector<PositionComponentSpec> out;
  if (!j.contains("position_encoding") || j["position_encoding"].is_null()) return out;
  auto list = j["position_encoding"];
  if (list.is_object()) list = nlohmann::json::array({list});
  if (!list.is_array())
    throw Error(where + ": \"position_encoding\" must be a list of components or one component");
  std::set<std::string> seen;
  for (const auto& item : list) {
    if (!item.is_object() || !item.contains("type") || !item["type"].is_string())
      throw Error(where + ": each position_encoding component needs a \"type\" string, got " +
                  item.dump());
    PositionComponentSpec spec{item["type"].get<std::string>(), item.dump()};
    if (!seen.insert(spec.type).second)
      throw Error(where + ": position_encoding \"" + spec.type + "\" appears twice");
    if (spec.type != "none") out.push_back(std::move(spec));
  }
  return out;
}

/// The format's spelling of an enum-valued key, shared by the reader and the writer so that a
/// written config always reads back (the first entry is the default).
template <typename Enum>
using Spellings = std::vector<std::pair<Enum, std::string>>;

const Spellings<NormType> kNorms{{NormType::RMSNorm, "rmsnorm"}, {NormType::LayerNorm, "layernorm"}};
const Spellings<MlpType> kMlps{{MlpType::Gated, "gated"}, {MlpType::Plain, "plain"}};
const Spellings<Activation> kActivations{{Activation::SiLU, "silu"},
                                         {Activation::GeluExact, "gelu"},
                                         {Activation::GeluNew, "gelu_tanh"}};

template <typename Enum>
Enum read_choice(const nlohmann::json& j, const char* key, const Spellings<Enum>& table,
                 const std::string& where) {
  std::vector<std::string> names;
  for (const auto& [value, name] : table) names.push_back(name);
  const auto chosen = choice_or_first(j, key, names, where);
  for (const auto& [value, name] : table)
    if (name == chosen) return value;
  return table.front().first;  // unreachable: choice_or_first returns one of the names
}

template <typename Enum>
const std::string& spelling(Enum value, const Spellings<Enum>& table) {
  for (const auto& [v, name] : table)
    if (v == value) return name;
  return table.front().second;  // unreachable: every enumerator has a row
}

}  // namespace

ModelConfig poslens_config(const nlohmann::json& j, const std::string& where) {
  static const std::set<std::string> known{
      "model_type", "format_version", "d_model", "n_layers", "n_heads", "n_kv_heads", "d_head",
      "d_mlp", "vocab_size", "n_ctx", "norm", "norm_eps", "mlp", "activation", "qkv_bias",
      "attn_out_bias", "mlp_bias", "tie_word_embeddings", "causal", "attn_scale", "bos_token_id",
      "position_encoding", "architectures", "torch_dtype", "training"};
  for (const auto& [key, value] : j.items())
    if (!known.count(key)) throw Error(where + ": unknown key \"" + key + "\" for a PosLens model");
  if (int_or(j, "format_version", 1, where) != 1)
    throw Error(where + ": format_version " + j["format_version"].dump() +
                " is newer than this PosLens reads (1)");

  ModelConfig c;
  c.architecture = "PosLens";
  c.d_model = require_int(j, "d_model", where);
  c.n_layers = require_int(j, "n_layers", where);
  c.n_heads = require_int(j, "n_heads", where);
  c.n_kv_heads = int_or(j, "n_kv_heads", c.n_heads, where);
  c.d_head = int_or(j, "d_head", c.n_heads > 0 ? c.d_model / c.n_heads : 0, where);
  c.d_mlp = require_int(j, "d_mlp", where);
  c.vocab_size = require_int(j, "vocab_size", where);
  c.n_ctx = require_int(j, "n_ctx", where);
  c.norm = read_choice(j, "norm", kNorms, where);
  c.norm_eps = number_or(j, "norm_eps", 1e-5, where);
  c.mlp = read_choice(j, "mlp", kMlps, where);
  c.activation = read_choice(j, "activation", kActivations, where);
  c.qkv_bias = bool_or(j, "qkv_bias", false, where);
  c.attn_out_bias = bool_or(j, "attn_out_bias", false, where);
  c.mlp_bias = bool_or(j, "mlp_bias", false, where);
  c.tie_word_embeddings = bool_or(j, "tie_word_embeddings", false, where);
  c.causal = bool_or(j, "causal", true, where);
  c.attn_scale = number_or(j, "attn_scale", 0.0, where);
  c.bos_token_id = int_or(j, "bos_token_id", -1, where);
  c.pe_components = components(j, where);
  if (j.contains("training") && !j["training"].is_null()) {
    if (!j["training"].is_object())
      throw Error(where + ": \"training\" must be an object (how the model was trained)");
    c.training_json = j["training"].dump();
  }
  c.validate();
  return c;
}

WeightTable poslens_table(const ModelConfig& c) {
  const int64_t d = c.d_model, q_out = c.n_heads * c.d_head, kv_out = c.n_kv_heads * c.d_head;
  const bool layer_norm = c.norm == NormType::LayerNorm;
  WeightTable t;
  t.rules.push_back({"tok_embed.weight", {c.vocab_size, d}, {}, &ModelWeights::tok_embed});
  auto layer = [&](const std::string& name, std::vector<int64_t> shape, LayerField field) {
    t.rules.push_back({"blocks.{L}." + name, std::move(shape), {field}});
  };
  layer("attn_norm.weight", {d}, &LayerWeights::attn_norm);
  if (layer_norm) layer("attn_norm.bias", {d}, &LayerWeights::attn_norm_bias);
  layer("attn.q_proj.weight", {q_out, d}, &LayerWeights::w_q);
  layer("attn.k_proj.weight", {kv_out, d}, &LayerWeights::w_k);
  layer("attn.v_proj.weight", {kv_out, d}, &LayerWeights::w_v);
  if (c.qkv_bias) {
    layer("attn.q_proj.bias", {q_out}, &LayerWeights::b_q);
    layer("attn.k_proj.bias", {kv_out}, &LayerWeights::b_k);
    layer("attn.v_proj.bias", {kv_out}, &LayerWeights::b_v);
  }
  layer("attn.o_proj.weight", {d, q_out}, &LayerWeights::w_o);
  if (c.attn_out_bias) layer("attn.o_proj.bias", {d}, &LayerWeights::b_o);
  layer("mlp_norm.weight", {d}, &LayerWeights::mlp_norm);
  if (layer_norm) layer("mlp_norm.bias", {d}, &LayerWeights::mlp_norm_bias);
  if (c.mlp == MlpType::Gated) {
    layer("mlp.gate_proj.weight", {c.d_mlp, d}, &LayerWeights::w_gate);
    if (c.mlp_bias) layer("mlp.gate_proj.bias", {c.d_mlp}, &LayerWeights::b_gate);
  }
  layer("mlp.up_proj.weight", {c.d_mlp, d}, &LayerWeights::w_up);
  layer("mlp.down_proj.weight", {d, c.d_mlp}, &LayerWeights::w_down);
  if (c.mlp_bias) {
    layer("mlp.up_proj.bias", {c.d_mlp}, &LayerWeights::b_up);
    layer("mlp.down_proj.bias", {d}, &LayerWeights::b_down);
  }
  t.rules.push_back({"final_norm.weight", {d}, {}, &ModelWeights::final_norm});
  if (layer_norm) t.rules.push_back({"final_norm.bias", {d}, {}, &ModelWeights::final_norm_bias});
  if (!c.tie_word_embeddings)
    t.rules.push_back({"lm_head.weight", {c.vocab_size, d}, {}, &ModelWeights::unembed});

  for (const auto& spec : c.pe_components)
    for (const auto& w : component_recipe(spec, c.position_context()).weights) {
      WeightRule rule;
      rule.pattern = (w.per_layer ? "blocks.{L}.attn.pe." : "pe.") + w.name;
      rule.stored_shape = w.shape;
      rule.pe_name = w.name;
      rule.optional = w.optional;
      t.rules.push_back(std::move(rule));
    }
  return t;
}

std::vector<ArchitectureEntry> poslens_architectures() {
  return {{"PosLens", {"poslens"},
           [](const nlohmann::json& j, const std::string&, const std::string& where) {
             auto c = poslens_config(j, where);
             c.format = "poslens";
             return c;
           },
           [](const ModelConfig& c, const TensorSource&) { return poslens_table(c); },
           /*model_type_first=*/true}};
}

}  // namespace poslens::arch

namespace poslens {

std::string poslens_config_json(const ModelConfig& c, int indent) {
  if (c.architecture != "PosLens")
    throw Error("a PosLens config can only be written for a PosLens-format model, not " +
                c.architecture);
  // The reader's spellings (poslens_config above), so that the text loads to an equal config.
  nlohmann::ordered_json j;
  j["model_type"] = "poslens";
  j["format_version"] = 1;
  j["d_model"] = c.d_model;
  j["n_layers"] = c.n_layers;
  j["n_heads"] = c.n_heads;
  j["n_kv_heads"] = c.n_kv_heads;
  j["d_head"] = c.d_head;
  j["d_mlp"] = c.d_mlp;
  j["vocab_size"] = c.vocab_size;
  j["n_ctx"] = c.n_ctx;
  j["norm"] = arch::spelling(c.norm, arch::kNorms);
  j["norm_eps"] = c.norm_eps;
  j["mlp"] = arch::spelling(c.mlp, arch::kMlps);
  j["activation"] = arch::spelling(c.activation, arch::kActivations);
  j["qkv_bias"] = c.qkv_bias;
  j["attn_out_bias"] = c.attn_out_bias;
  j["mlp_bias"] = c.mlp_bias;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["causal"] = c.causal;
  if (c.attn_scale != 0.0) j["attn_scale"] = c.attn_scale;
  if (c.bos_token_id >= 0) j["bos_token_id"] = c.bos_token_id;
  j["position_encoding"] = nlohmann::ordered_json::parse(components_json(c.pe_components));
  if (!c.training_json.empty()) j["training"] = nlohmann::ordered_json::parse(c.training_json);
  return j.dump(indent);
}

}  // namespace poslens
