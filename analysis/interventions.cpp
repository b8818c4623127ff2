#include "analysis/interventions.h"

#include <torch/torch.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "analysis/analysis_files.h"
#include "core/base/error.h"
#include "core/formats/hdf5_reader.h"
#include "core/base/text.h"

namespace poslens {
namespace {

/// "0.25" as a number, whole; else throws naming `item`.
double number_in(const std::string& text, const std::string& item) {
  size_t used = 0;
  double x = 0;
  try {
    x = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) throw Error("--intervene " + item + ": \"" + text + "\" is not a number");
  return x;
}

/// "L3H1:2" or "L3:2".
HeadTemperature temperature_of(const std::string& spec, const std::string& item) {
  const auto colon = spec.find(':');
  int layer = -1, head = -1, used = 0;
  const auto where = spec.substr(0, colon);
  const bool both = std::sscanf(where.c_str(), "L%dH%d%n", &layer, &head, &used) == 2;
  if (!both && !(std::sscanf(where.c_str(), "L%d%n", &layer, &used) == 1 && (head = -1, true)))
    used = 0;
  if (colon == std::string::npos || used != static_cast<int>(where.size()) || layer < 0 || (both && head < 0))
    throw Error("--intervene " + item + ": expected temperature=LxHy:τ or temperature=Lx:τ");
  HeadTemperature t{layer, head, number_in(spec.substr(colon + 1), item)};
  if (!(t.tau > 0)) throw Error("--intervene " + item + ": the temperature must be > 0");
  return t;
}

/// Sets "p_rope_drop" on every RoPE component of `components`; true if there was one.
bool drop_lowest(std::vector<PositionComponentSpec>& components, double p) {
  bool found = false;
  for (auto& component : components) {
    if (component.type != "rope") continue;
    auto params = nlohmann::json::parse(component.params_json);
    params["p_rope_drop"] = p;
    component.params_json = params.dump();
    found = true;
  }
  return found;
}

/// Throws unless head temperature on `layer` scales its logits (see the header).
void check_temperature_applies(const Transformer& model, int64_t layer) {
  const auto& c = model.config();
  const std::string where = "temperature on layer " + std::to_string(layer) + ": ";
  if (layer >= c.n_layers)
    throw Error(where + "the model has " + std::to_string(c.n_layers) + " layers");
  if (c.attn_logit_softcap > 0)
    throw Error(where + "the logits pass a soft cap (attn_logit_softcap), which dividing q would not divide");
  if (model.position_encoding(static_cast<int>(layer)).has_position_scores())
    throw Error(where + "its position encoding adds a term to the logits (" +
                model.position_encoding(static_cast<int>(layer)).describe() + "), which dividing q would not divide");
  if (c.qk_norm == QkNorm::PerHead)
    throw Error(where + "q is RMS-normed per head with a gain the heads share, so no one head's q can be scaled");
}

/// The means of a massive-activations file (MassiveActivations::means) as d_model values.
std::vector<double> massive_means_of(const std::string& path, int64_t d_model) {
  const auto m = read_massive_activations_hdf5(Hdf5Reader(path));
  if (!m.means.defined())
    throw Error("massive=mean:" + path + ": the file has no means (no layer had massive entries on the text it "
                "was written for; write it with poslens-cli massive-activations on a text where they appear)");
  if (m.means.size(0) != d_model)
    throw Error("massive=mean:" + path + ": " + std::to_string(m.means.size(0)) + " means, for a model with d_model " +
                std::to_string(d_model) + " (written for another model?)");
  const auto means = m.means.contiguous();
  return {means.data_ptr<double>(), means.data_ptr<double>() + means.numel()};
}

}  // namespace

std::string Interventions::describe() const {
  std::string text;
  const auto add = [&](const std::string& s) { text += (text.empty() ? "" : ", ") + s; };
  if (p_rope > 0) add("p-RoPE " + significant(p_rope, 6));
  for (const auto& t : temperatures)
    add("L" + std::to_string(t.layer) + (t.head >= 0 ? "H" + std::to_string(t.head) : "") + " τ " + significant(t.tau, 6));
  if (remove_sinks) add("no learned sinks");
  if (mask_first_key) add("first token masked as a key");
  if (zero_massive) add("massive activations zeroed");
  if (!massive_means_file.empty()) add("massive activations set to their means (" + massive_means_file + ")");
  return text.empty() ? "none" : text;
}

Interventions parse_interventions(const std::vector<std::string>& items) {
  Interventions iv;
  for (const auto& item : items) {
    const auto eq = item.find('=');
    const auto name = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (name == "p-rope" && eq != std::string::npos) {
      iv.p_rope = number_in(value, item);
      if (!(iv.p_rope >= 0 && iv.p_rope <= 1)) throw Error("--intervene " + item + ": p must be in [0, 1]");
    } else if (name == "temperature" && eq != std::string::npos) {
      iv.temperatures.push_back(temperature_of(value, item));
    } else if (item == "no-sinks") {
      iv.remove_sinks = true;
    } else if (item == "mask-first-key") {
      iv.mask_first_key = true;
    } else if (item == "massive=zero") {
      iv.zero_massive = true;
    } else if (name == "massive" && value.rfind("mean:", 0) == 0 && value.size() > 5) {
      iv.massive_means_file = value.substr(5);
    } else {
      throw Error("--intervene " + item +
                  ": expected p-rope=P, temperature=LxHy:τ, temperature=Lx:τ, no-sinks, mask-first-key, massive=zero "
                  "or massive=mean:FILE (a massive-activations file)");
    }
  }
  if (iv.zero_massive && !iv.massive_means_file.empty())
    throw Error("--intervene: massive=zero and massive=mean:FILE ablate the same entries; choose one");
  return iv;
}

std::unique_ptr<Transformer> intervened_model(const Transformer& model, const Interventions& iv) {
  ModelConfig config = model.config();
  ModelWeights weights = model.weights();  // tensors shared; the changed ones are replaced
  if (iv.p_rope > 0) {
    bool found = drop_lowest(config.pe_components, iv.p_rope);
    for (auto& scheme : config.layer_schemes) found = drop_lowest(scheme.pe_components, iv.p_rope) || found;
    if (!found)
      throw Error("p-RoPE stops RoPE's lowest frequencies, and this model's position encoding is " +
                  model.position_encoding().describe());
  }
  for (const auto& t : iv.temperatures) {
    check_temperature_applies(model, t.layer);
    if (t.head >= config.n_heads)
      throw Error("temperature on L" + std::to_string(t.layer) + "H" + std::to_string(t.head) + ": the model has " +
                  std::to_string(config.n_heads) + " heads");
    auto& layer = weights.layers.at(static_cast<size_t>(t.layer));
    const int64_t d_head = model.layer_config(static_cast<int>(t.layer)).d_head;  // the layer's own (Gemma 4)
    const int64_t rows = t.head < 0 ? config.n_heads * d_head : d_head;
    const int64_t first = t.head < 0 ? 0 : t.head * d_head;
    torch::NoGradGuard no_grad;
    // A Whole q norm (OLMo 2) normalises before its gain: the gain's slice scales the head's q.
    auto& scaled = config.qk_norm == QkNorm::Whole ? layer.q_norm : layer.w_q;
    scaled = scaled.clone();
    scaled.narrow(0, first, rows).div_(t.tau);
    if (config.qk_norm != QkNorm::Whole && layer.b_q.defined()) {
      layer.b_q = layer.b_q.clone();
      layer.b_q.narrow(0, first, rows).div_(t.tau);
    }
  }
  if (iv.remove_sinks) {
    if (!config.attention_sinks) throw Error("no-sinks removes learned attention sinks, and this model has none");
    config.attention_sinks = false;
    for (auto& layer : weights.layers) layer.attn_sinks = at::Tensor();
  }
  const bool massive = iv.zero_massive || !iv.massive_means_file.empty();
  if ((iv.mask_first_key || massive) && config.encoder_decoder())
    throw Error(std::string(iv.mask_first_key ? "mask-first-key" : "a massive-activation ablation") +
                ": an encoder–decoder model's encoder, decoder and cross-attention would each need their own "
                "choice; not supported");
  config.mask_first_key = config.mask_first_key || iv.mask_first_key;
  config.ablate_massive_activations = config.ablate_massive_activations || massive;
  if (!iv.massive_means_file.empty()) config.massive_means = massive_means_of(iv.massive_means_file, config.d_model);
  if (!iv.empty())
    config.interventions = (config.interventions.empty() ? "" : config.interventions + ", ") + iv.describe();
  return std::make_unique<Transformer>(std::move(config), std::move(weights));
}

}  // namespace poslens
