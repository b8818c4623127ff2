#include "core/pe_components.h"

#include <torch/torch.h>

#include <set>

#include <nlohmann/json.hpp>

#include "core/alibi.h"
#include "core/arch_common.h"
#include "core/error.h"
#include "core/hope.h"
#include "core/learned_absolute.h"
#include "core/pe_absolute.h"
#include "core/pe_bias.h"
#include "core/pe_cope.h"
#include "core/pe_relative.h"
#include "core/rope.h"

namespace poslens {
namespace {

using nlohmann::json;

/// A component's parameters with the checks every type shares: unknown keys are errors (a
/// misspelt option must not silently fall back to its default).
class Params {
 public:
  Params(const PositionComponentSpec& spec, std::set<std::string> known)
      : where_("position_encoding \"" + spec.type + "\"") {
    try {
      j_ = json::parse(spec.params_json);
    } catch (const json::exception& e) {
      throw Error(where_ + ": parameters are not valid JSON: " + e.what());
    }
    if (!j_.is_object()) throw Error(where_ + ": parameters must be an object");
    known.insert("type");
    for (const auto& [key, value] : j_.items())
      if (!known.count(key)) throw Error(where_ + ": unknown parameter \"" + key + "\"");
  }
  const std::string& where() const { return where_; }
  int64_t integer(const char* key, int64_t fallback) const {
    return arch::int_or(j_, key, fallback, where_);
  }
  int64_t required_integer(const char* key) const { return arch::require_int(j_, key, where_); }
  double number(const char* key, double fallback) const {
    return arch::number_or(j_, key, fallback, where_);
  }
  bool flag(const char* key, bool fallback) const { return arch::bool_or(j_, key, fallback, where_); }
  /// One of `choices` (the first is the default).
  std::string choice(const char* key, const std::vector<std::string>& choices) const {
    return arch::choice_or_first(j_, key, choices, where_);
  }
  const json& raw() const { return j_; }
  /// Throws unless lo <= value.
  void at_least(const char* key, int64_t value, int64_t lo) const {
    if (value < lo)
      throw Error(where_ + ": \"" + key + "\" must be >= " + std::to_string(lo) + ", got " +
                  std::to_string(value));
  }

 private:
  std::string where_;
  json j_;
};

RopePairing pairing_of(const Params& p) {
  return p.choice("pairing", {"half_split", "interleaved"}) == "half_split" ? RopePairing::HalfSplit
                                                                            : RopePairing::Interleaved;
}

/// The weight `name` of every layer: the shared `pe.<name>` repeated, or each layer's own.
std::vector<at::Tensor> per_layer(const ModelWeights& w, const std::string& name, bool shared) {
  std::vector<at::Tensor> out;
  for (const auto& layer : w.layers) {
    const auto& map = shared ? w.pe : layer.pe;
    const auto it = map.find(name);
    out.push_back(it == map.end() ? at::Tensor() : it->second);
  }
  return out;
}

at::Tensor model_level(const ModelWeights& w, const std::string& name) {
  const auto it = w.pe.find(name);
  if (it == w.pe.end()) throw Error("position encoding weight pe." + name + " was not loaded");
  return it->second;
}

double scalar(const at::Tensor& t) { return t.to(torch::kCPU, torch::kFloat64).item<double>(); }

ComponentRecipe none(const PositionComponentSpec& spec) {
  Params(spec, {});
  return {{}, [](const ModelWeights&) { return std::make_unique<ComposedEncoding>(
                                            std::vector<std::unique_ptr<PositionEncoding>>{}); }};
}

ComponentRecipe learned_absolute(const PositionComponentSpec& spec, const ModelConfig& c) {
  Params(spec, {});
  return {{{"pos_embed", {c.n_ctx, c.d_model}}}, [](const ModelWeights& w) {
            return std::make_unique<LearnedAbsoluteEncoding>(model_level(w, "pos_embed"));
          }};
}

ComponentRecipe sinusoidal(const PositionComponentSpec& spec, const ModelConfig& c) {
  Params(spec, {});
  const int64_t d = c.d_model;
  return {{}, [d](const ModelWeights&) { return std::make_unique<SinusoidalEncoding>(d); }};
}

ComponentRecipe heinsen(const PositionComponentSpec& spec, const ModelConfig& c) {
  const Params p(spec, {"d_pe"});
  const int64_t d_pe = p.required_integer("d_pe"), d = c.d_model;
  p.at_least("d_pe", d_pe, 1);
  return {{{"heinsen_p.weight", {d_pe, d}}, {"heinsen_p.bias", {d_pe}},
           {"heinsen_h.weight", {d_pe, d}}, {"heinsen_h.bias", {d_pe}},
           {"heinsen_r.weight", {d, d_pe}}, {"heinsen_r.bias", {d}}},
          [](const ModelWeights& w) {
            return std::make_unique<HeinsenEncoding>(HeinsenWeights{
                model_level(w, "heinsen_p.weight"), model_level(w, "heinsen_p.bias"),
                model_level(w, "heinsen_h.weight"), model_level(w, "heinsen_h.bias"),
                model_level(w, "heinsen_r.weight"), model_level(w, "heinsen_r.bias")});
          }};
}

ComponentRecipe rope(const PositionComponentSpec& spec, const ModelConfig& c) {
  const Params p(spec, {"rope_theta", "pairing", "rotary_dim", "rope_scaling"});
  ModelConfig rc = c;  // what rope_scaling_from_hf reads: theta, rotary_dim, n_ctx
  rc.rope_theta = p.number("rope_theta", 10000.0);
  rc.rotary_dim = p.integer("rotary_dim", c.d_head);
  if (rc.rotary_dim < 2 || rc.rotary_dim > c.d_head || rc.rotary_dim % 2)
    throw Error(p.where() + ": \"rotary_dim\" must be even and in [2, d_head=" +
                std::to_string(c.d_head) + "], got " + std::to_string(rc.rotary_dim));
  if (!(rc.rope_theta > 0)) throw Error(p.where() + ": \"rope_theta\" must be positive");
  const auto scaling = arch::rope_scaling_from_hf(p.raw(), rc, p.where());
  const auto pairing = pairing_of(p);
  return {{}, [rc, scaling, pairing](const ModelWeights&) {
            return std::make_unique<RotaryEncoding>(rc.rope_theta, rc.rotary_dim, rc.d_head,
                                                    pairing, scaling);
          }};
}

ComponentRecipe hope(const PositionComponentSpec& spec, const ModelConfig& c) {
  const Params p(spec, {"rope_theta", "pairing", "L"});
  const double theta = p.number("rope_theta", 10000.0);
  const int64_t L = p.integer("L", c.n_ctx), d_head = c.d_head;
  const auto pairing = pairing_of(p);
  HopeEncoding check(theta, L, d_head, pairing);  // bad parameters fail at config time
  return {{}, [=](const ModelWeights&) {
            return std::make_unique<HopeEncoding>(theta, L, d_head, pairing);
          }};
}

ComponentRecipe alibi(const PositionComponentSpec& spec, const ModelConfig& c) {
  Params(spec, {});
  const int64_t heads = c.n_heads;
  const bool causal = c.causal;
  return {{}, [=](const ModelWeights&) { return std::make_unique<AlibiEncoding>(heads, causal); }};
}

void require_causal(const Params& p, const ModelConfig& c) {
  if (!c.causal) throw Error(p.where() + ": supported for causal models only");
}

ComponentRecipe shaw(const PositionComponentSpec& spec, const ModelConfig& c) {
  const Params p(spec, {"max_distance", "values", "shared"});
  require_causal(p, c);
  const int64_t k = p.required_integer("max_distance");
  p.at_least("max_distance", k, 0);
  const bool values = p.flag("values", false), shared = p.flag("shared", false);
  std::vector<PeWeightSpec> weights{{"shaw_key", {k + 1, c.d_head}, !shared}};
  if (values) weights.push_back({"shaw_value", {k + 1, c.d_head}, !shared});
  return {weights, [=](const ModelWeights& w) {
            return std::make_unique<ShawEncoding>(
                per_layer(w, "shaw_key", shared),
                values ? per_layer(w, "shaw_value", shared) : std::vector<at::Tensor>{}, shared);
          }};
}

ComponentRecipe t5(const PositionComponentSpec& spec, const ModelConfig& c) {
  const Params p(spec, {"num_buckets", "max_distance", "shared"});
  const int64_t buckets = p.integer("num_buckets", 32), max_distance = p.integer("max_distance", 128);
  const bool shared = p.flag("shared", true), bidirectional = !c.causal;
  T5BiasEncoding check({}, bidirectional, buckets, max_distance, shared);  // bucket arguments
  return {{{"t5_bias", {buckets, c.n_heads}, !shared}}, [=](const ModelWeights& w) {
            return std::make_unique<T5BiasEncoding>(per_layer(w, "t5_bias", shared), bidirectional,
                                                    buckets, max_distance, shared);
          }};
}

ComponentRecipe transformer_xl(const PositionComponentSpec& spec, const ModelConfig& c) {
  const Params p(spec, {"shared"});
  const bool shared = p.flag("shared", false);
  const int64_t H = c.n_heads, dh = c.d_head;
  if (c.d_model % 2) throw Error(p.where() + ": d_model must be even (sinusoidal R)");
  const bool causal = c.causal;
  return {{{"txl_r_proj.weight", {H * dh, c.d_model}, !shared},
           {"txl_u", {H, dh}, !shared},
           {"txl_v", {H, dh}, !shared}},
          [=](const ModelWeights& w) {
            const auto r = per_layer(w, "txl_r_proj.weight", shared);
            const auto u = per_layer(w, "txl_u", shared), v = per_layer(w, "txl_v", shared);
            std::vector<TxlWeights> layers;
            for (size_t l = 0; l < r.size(); ++l) layers.push_back({r[l], u[l], v[l]});
            return std::make_unique<TransformerXlEncoding>(std::move(layers), H, dh, causal, shared);
          }};
}

ComponentRecipe kerple(const PositionComponentSpec& spec, const ModelConfig& c) {
  const Params p(spec, {"variant", "shared"});
  const auto variant = p.choice("variant", {"log", "power"}) == "log" ? KerpleVariant::Log
                                                                     : KerpleVariant::Power;
  const bool shared = p.flag("shared", false), causal = c.causal;
  return {{{"kerple_p", {c.n_heads}, !shared}, {"kerple_a", {c.n_heads}, !shared}},
          [=](const ModelWeights& w) {
            return std::make_unique<KerpleEncoding>(variant, per_layer(w, "kerple_p", shared),
                                                    per_layer(w, "kerple_a", shared), causal, shared);
          }};
}

ComponentRecipe fire(const PositionComponentSpec& spec, const ModelConfig& c) {
  const Params p(spec, {"hidden", "shared"});
  require_causal(p, c);
  const int64_t hidden = p.integer("hidden", 32);
  p.at_least("hidden", hidden, 1);
  const bool shared = p.flag("shared", false);
  return {{{"fire_mlp1.weight", {hidden, 1}, !shared},
           {"fire_mlp1.bias", {hidden}, !shared},
           {"fire_mlp2.weight", {c.n_heads, hidden}, !shared},
           {"fire_mlp2.bias", {c.n_heads}, !shared},
           {"fire_c", {1}, !shared},
           {"fire_l_thr", {1}, !shared}},
          [=](const ModelWeights& w) {
            const auto w1 = per_layer(w, "fire_mlp1.weight", shared);
            const auto b1 = per_layer(w, "fire_mlp1.bias", shared);
            const auto w2 = per_layer(w, "fire_mlp2.weight", shared);
            const auto b2 = per_layer(w, "fire_mlp2.bias", shared);
            const auto cs = per_layer(w, "fire_c", shared), ls = per_layer(w, "fire_l_thr", shared);
            std::vector<FireParams> layers;
            for (size_t l = 0; l < w1.size(); ++l)
              layers.push_back({w1[l], b1[l], w2[l], b2[l], scalar(cs[l]), scalar(ls[l])});
            return std::make_unique<FireEncoding>(std::move(layers), shared);
          }};
}

ComponentRecipe cope(const PositionComponentSpec& spec, const ModelConfig& c) {
  const Params p(spec, {"npos_max", "gates", "logit_scale", "position", "shared"});
  CopeOptions o;
  o.npos_max = p.required_integer("npos_max");
  p.at_least("npos_max", o.npos_max, 1);
  const auto gates = p.choice("gates", {"keys", "sep_keys", "values"});
  o.gates = gates == "keys" ? CopeGateSource::Keys
            : gates == "sep_keys" ? CopeGateSource::SepKeys : CopeGateSource::Values;
  o.logit_scale = p.choice("logit_scale", {"divide_all", "no_div"}) == "divide_all"
                      ? CopeLogitScale::DivideAll : CopeLogitScale::NoDiv;
  o.position = p.choice("position", {"embedding", "alibi"}) == "embedding"
                   ? CopePositionTerm::Embedding : CopePositionTerm::Alibi;
  o.shared = p.flag("shared", false);
  const int64_t H = c.n_heads, dh = c.d_head;
  std::vector<PeWeightSpec> weights;
  if (o.position == CopePositionTerm::Embedding)
    weights.push_back({"cope_pos_emb", {dh, o.npos_max}, !o.shared});
  else
    weights.push_back({"cope_slopes", {H}, !o.shared, /*optional=*/true});
  if (o.gates == CopeGateSource::SepKeys)
    weights.push_back({"cope_gate_proj.weight", {H * dh, c.d_model}, !o.shared});
  return {weights, [=](const ModelWeights& w) {
            const auto emb = per_layer(w, "cope_pos_emb", o.shared);
            const auto gate = per_layer(w, "cope_gate_proj.weight", o.shared);
            auto slopes = per_layer(w, "cope_slopes", o.shared);
            std::vector<CopeWeights> layers;
            for (size_t l = 0; l < emb.size(); ++l) {
              auto m = slopes[l];
              if (o.position == CopePositionTerm::Alibi && !m.defined())  // ALiBi-like decay
                m = -torch::tensor(alibi_slopes(H), torch::kFloat32).to(w.tok_embed.device());
              layers.push_back({emb[l], gate[l], m});
            }
            return std::make_unique<CopeEncoding>(o, std::move(layers), H, dh);
          }};
}

}  // namespace

const std::vector<std::string>& component_types() {
  static const std::vector<std::string> types{
      "none", "learned_absolute", "sinusoidal", "heinsen", "rope",   "hope", "alibi",
      "shaw", "t5",               "transformer_xl", "kerple", "fire", "cope"};
  return types;
}

ComponentRecipe component_recipe(const PositionComponentSpec& spec, const ModelConfig& c) {
  const auto& t = spec.type;
  if (t == "none") return none(spec);
  if (t == "learned_absolute") return learned_absolute(spec, c);
  if (t == "sinusoidal") return sinusoidal(spec, c);
  if (t == "heinsen") return heinsen(spec, c);
  if (t == "rope") return rope(spec, c);
  if (t == "hope") return hope(spec, c);
  if (t == "alibi") return alibi(spec, c);
  if (t == "shaw") return shaw(spec, c);
  if (t == "t5") return t5(spec, c);
  if (t == "transformer_xl") return transformer_xl(spec, c);
  if (t == "kerple") return kerple(spec, c);
  if (t == "fire") return fire(spec, c);
  if (t == "cope") return cope(spec, c);
  std::string list;
  for (const auto& name : component_types()) list += (list.empty() ? "" : ", ") + name;
  throw Error("unknown position_encoding type \"" + t + "\" (known: " + list + ")");
}

}  // namespace poslens
