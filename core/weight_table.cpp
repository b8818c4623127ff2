#include "core/weight_table.h"

#include <torch/torch.h>

#include <map>
#include <set>

#include "core/error.h"
#include "core/shape_text.h"

namespace poslens {
namespace {

std::string with_layer(const std::string& pattern, int64_t layer) {
  std::string name = pattern;
  const auto at = name.find("{L}");
  if (at != std::string::npos) name.replace(at, 3, std::to_string(layer));
  return name;
}

bool has_layer(const std::string& pattern) { return pattern.find("{L}") != std::string::npos; }

/// The parts of fused tensor `t` for a rule with several targets (WeightRule::Split).
std::vector<at::Tensor> split_fused(const at::Tensor& t, const WeightRule& rule,
                                    const std::string& name) {
  const auto n = static_cast<int64_t>(rule.layer_targets.size());
  if (rule.split == WeightRule::Split::Chunk) {
    if (t.size(0) % n != 0)
      throw Error("weight table: " + name + " has " + std::to_string(t.size(0)) +
                  " rows, not divisible into " + std::to_string(n) + " parts");
    return t.chunk(n, 0);
  }
  // PerHead: rows are [heads, n, d]; part i gathers row block i of every head.
  const int64_t heads = rule.split_heads;
  if (heads <= 0 || t.size(0) % (heads * n) != 0)
    throw Error("weight table: " + name + " has " + std::to_string(t.size(0)) +
                " rows, not divisible into " + std::to_string(heads) + " heads x " +
                std::to_string(n) + " parts");
  std::vector<int64_t> grouped{heads, n, t.size(0) / (heads * n)};
  std::vector<int64_t> part_shape{t.size(0) / n};
  for (int64_t dim = 1; dim < t.dim(); ++dim) {
    grouped.push_back(t.size(dim));
    part_shape.push_back(t.size(dim));
  }
  const auto view = t.view(grouped);
  std::vector<at::Tensor> parts;
  for (int64_t i = 0; i < n; ++i) parts.push_back(view.select(1, i).reshape(part_shape));
  return parts;
}

}  // namespace

int64_t parameter_count(const ModelWeights& w) {
  std::set<const void*> seen;
  int64_t total = 0;
  auto add = [&](const at::Tensor& t) {
    if (!t.defined() || !seen.insert(t.data_ptr()).second) return;
    total += t.numel();
  };
  add(w.tok_embed);
  add(w.pos_embed);
  for (const auto& l : w.layers)
    for (auto f : {&LayerWeights::attn_norm, &LayerWeights::attn_norm_bias, &LayerWeights::w_q,
                   &LayerWeights::b_q, &LayerWeights::w_k, &LayerWeights::b_k, &LayerWeights::w_v,
                   &LayerWeights::b_v, &LayerWeights::w_o, &LayerWeights::b_o,
                   &LayerWeights::mlp_norm, &LayerWeights::mlp_norm_bias, &LayerWeights::w_gate, &LayerWeights::b_gate,
                   &LayerWeights::w_up, &LayerWeights::b_up, &LayerWeights::w_down,
                   &LayerWeights::b_down})
      add(l.*f);
  for (const auto& l : w.layers)
    for (const auto& [name, t] : l.pe) add(t);
  for (const auto& [name, t] : w.pe) add(t);
  add(w.final_norm);
  add(w.final_norm_bias);
  add(w.unembed);
  add(w.unembed_bias);
  return total;
}

ModelWeights load_weights(const TensorSource& source, const WeightTable& table,
                          const ModelConfig& config, c10::Device device, c10::ScalarType dtype) {
  std::map<std::string, const TensorInfo*> stored;
  for (const auto& info : source.tensors()) stored[info.name] = &info;
  std::set<std::string> used;

  // A hostile or mistaken config (num_hidden_layers: 1000000000) must fail on the file's
  // contents, not by allocating a billion layers: the last layer's first required tensor has to
  // exist before any layer is made.
  for (const auto& rule : table.rules)
    if (has_layer(rule.pattern) && !rule.optional) {
      const auto last = with_layer(rule.pattern, config.n_layers - 1);
      if (!stored.count(last))
        throw Error("missing tensor " + last + " in " + source.describe() + " (the config says " +
                    std::to_string(config.n_layers) + " layers)");
      break;
    }

  ModelWeights weights;
  weights.layers.resize(static_cast<size_t>(config.n_layers));

  auto fetch = [&](const WeightRule& rule, const std::string& name) -> at::Tensor {
    const auto it = stored.find(name);
    if (it == stored.end()) {
      if (rule.optional) return {};
      throw Error("missing tensor " + name + " in " + source.describe());
    }
    if (it->second->shape != rule.stored_shape)
      throw Error("expected " + shape_str(rule.stored_shape) + ", got " +
                  shape_str(it->second->shape) + " for " + name + " in " + source.describe());
    used.insert(name);
    const at::Tensor stored_tensor = source.load(name);
    at::Tensor t = stored_tensor.to(dtype);
    if (rule.transpose) t = t.t();
    t = t.contiguous().to(device);
    // Weights never alias the source's memory map: the model outlives the opened file.
    if (t.data_ptr() == stored_tensor.data_ptr()) t = t.clone();
    return t;
  };

  for (const auto& rule : table.rules) {
    if (!has_layer(rule.pattern)) {
      at::Tensor t = fetch(rule, rule.pattern);
      if (!t.defined()) continue;
      if (!rule.pe_name.empty())
        weights.pe[rule.pe_name] = t;
      else
        weights.*rule.model_target = t;
      continue;
    }
    for (int64_t l = 0; l < config.n_layers; ++l) {
      at::Tensor t = fetch(rule, with_layer(rule.pattern, l));
      if (!t.defined()) continue;
      auto& layer = weights.layers[static_cast<size_t>(l)];
      if (!rule.pe_name.empty()) {
        layer.pe[rule.pe_name] = t;
      } else if (rule.layer_targets.size() == 1 || rule.split == WeightRule::Split::Shared) {
        for (const auto target : rule.layer_targets) layer.*target = t;
      } else {
        const auto parts = split_fused(t, rule, with_layer(rule.pattern, l));
        for (size_t i = 0; i < parts.size(); ++i)
          layer.*rule.layer_targets[i] = parts[i].contiguous();
      }
    }
  }

  // Known tensors we do not need (causal-mask buffers, cached rotary tables).
  for (const auto& pattern : table.ignored) {
    if (!has_layer(pattern)) {
      used.insert(pattern);
      continue;
    }
    for (int64_t l = 0; l < config.n_layers; ++l) used.insert(with_layer(pattern, l));
  }
  std::vector<std::string> unused;
  for (const auto& info : source.tensors())
    if (!used.count(info.name)) unused.push_back(info.name);
  if (!unused.empty()) {
    std::string list;
    for (size_t i = 0; i < unused.size() && i < 5; ++i) list += (i ? ", " : "") + unused[i];
    if (unused.size() > 5) list += " (and " + std::to_string(unused.size() - 5) + " more)";
    throw Error("unexpected tensors in " + source.describe() + " for " + config.architecture +
                " with " + std::to_string(config.n_layers) + " layers: " + list);
  }
  return weights;
}

}  // namespace poslens
