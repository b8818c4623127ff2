#include "core/models/weight_table.h"

#include <algorithm>

#include <torch/torch.h>
#include <torch/version.h>
#include <c10/core/CPUAllocator.h>

#include <map>
#include <set>

#include "core/base/error.h"
#include "core/base/shape_text.h"

namespace poslens {
namespace {

/// Whether `t` is a private block: the whole of an allocation of LibTorch's CPU allocator that
/// nothing else references — not memory torch::from_blob borrows (a source's memory map), not a
/// view keeping a larger block alive, not a tensor the source still holds (in-memory weights).
bool is_private_block(const at::Tensor& t) {
  return t.storage().data_ptr().get_deleter() == c10::GetCPUAllocator()->raw_deleter() &&
         t.storage_offset() == 0 && t.storage().nbytes() == static_cast<size_t>(t.numel()) * t.element_size() &&
         t.use_count() == 1 && t.storage().use_count() == 1;
}

std::string with_layer(const std::string& pattern, int64_t layer) {
  std::string name = pattern;
  const auto at = name.find("{L}");
  if (at != std::string::npos) name.replace(at, 3, std::to_string(layer));
  return name;
}

bool has_layer(const std::string& pattern) { return pattern.find("{L}") != std::string::npos; }

/// The layers a {L} rule runs over: its only_layers, or all `n`. Throws poslens::Error for an
/// only_layers entry outside [0, n).
std::vector<int64_t> rule_layers(const WeightRule& rule, int64_t n) {
  for (const int64_t l : rule.only_layers)
    if (l < 0 || l >= n)
      throw Error("weight table: " + rule.pattern + " names layer " + std::to_string(l) + " of " + std::to_string(n));
  if (!rule.only_layers.empty()) return rule.only_layers;
  std::vector<int64_t> all(static_cast<size_t>(std::max<int64_t>(n, 0)));
  for (int64_t l = 0; l < n; ++l) all[static_cast<size_t>(l)] = l;
  return all;
}

bool has_experts(const std::string& pattern) { return pattern.find("{E}") != std::string::npos; }

std::string with_expert(const std::string& pattern, int64_t expert) {
  std::string name = pattern;
  const auto at = name.find("{E}");
  if (at != std::string::npos) name.replace(at, 3, std::to_string(expert));
  return name;
}

/// The names "{a,b}" in `name` stands for ("x.{w1,w3}.y": x.w1.y, x.w3.y), or `name` itself.
std::vector<std::string> alternatives(const std::string& name) {
  const auto open = name.find('{');
  const auto close = open == std::string::npos ? open : name.find('}', open);
  if (close == std::string::npos) return {name};
  std::vector<std::string> names;
  const std::string choices = name.substr(open + 1, close - open - 1);
  for (size_t from = 0;;) {
    const auto comma = choices.find(',', from);
    names.push_back(name.substr(0, open) + choices.substr(from, comma - from) + name.substr(close + 1));
    if (comma == std::string::npos) return names;
    from = comma + 1;
  }
}

/// How many stored tensors one layer's `pattern` names ({E} and {a,b} expanded).
int64_t stored_count(const std::string& pattern, int64_t n_experts) {
  const auto per_expert = static_cast<int64_t>(alternatives(with_expert(pattern, 0)).size());
  return has_experts(pattern) ? n_experts * per_expert : per_expert;
}

/// The parts of fused tensor `t` for a rule with several targets (WeightRule::Split).
std::vector<at::Tensor> split_fused(const at::Tensor& t, const WeightRule& rule,
                                    const std::string& name) {
  const auto n = static_cast<int64_t>(rule.layer_targets.size());
  if (rule.split == WeightRule::Split::Chunk && !rule.split_rows.empty()) {
    int64_t rows = 0;
    for (const int64_t r : rule.split_rows) rows += r;
    if (static_cast<int64_t>(rule.split_rows.size()) != n || rows != t.size(0))
      throw Error("weight table: " + name + " has " + std::to_string(t.size(0)) + " rows, not the " +
                  std::to_string(rows) + " of its " + std::to_string(rule.split_rows.size()) + " parts");
    return t.split_with_sizes(rule.split_rows, 0);
  }
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

/// The MoE experts' weights (LayerWeights::experts_gate_up, experts_down: logically x @ W,
/// [n_experts, in, out]) in the memory layout this LibTorch's CPU GEMM is fastest with.
/// LibTorch 2.x multiplies bfloat16 30-70x faster when W is a transposed view of nn.Linear's
/// [out, in] rows (11 vs 340-790 ms for 20x2048 . 2048x2816; float32 about the same); 1.13
/// (OpenBLAS) is faster on row-major [in, out] (47 vs 150 ms bfloat16), which stays. cuBLAS takes
/// either: on a GPU nothing is copied (no second copy of a layer's experts in device memory while
/// loading). Shapes and values are unchanged. tools/bench_expert_layout.py, docs/performance.md.
at::Tensor experts_in_gemm_layout(const at::Tensor& w) {
#if TORCH_VERSION_MAJOR >= 2
  if (w.device().is_cpu()) return w.transpose(1, 2).contiguous().transpose(1, 2);
  return w;
#else
  return w;
#endif
}

}  // namespace

int64_t parameter_count(const ModelWeights& w) {
  std::set<const void*> seen;
  int64_t total = 0;
  auto add = [&](const at::Tensor& t) {
    if (!t.defined() || !seen.insert(t.data_ptr()).second) return;
    total += t.numel();
  };
  for (const auto* t : {&w.tok_embed, &w.token_type_embed, &w.embed_norm, &w.embed_norm_bias, &w.per_layer_embed,
                        &w.per_layer_model_projection, &w.per_layer_projection_norm})
    add(*t);
  std::vector<const LayerWeights*> layers;
  for (const auto& l : w.layers) layers.push_back(&l);
  for (const auto& l : w.encoder_layers) layers.push_back(&l);
  for (const auto* l : layers)
    for (auto f : {&LayerWeights::attn_norm, &LayerWeights::attn_norm_bias, &LayerWeights::w_q,
                   &LayerWeights::b_q, &LayerWeights::w_k, &LayerWeights::b_k, &LayerWeights::w_v,
                   &LayerWeights::b_v, &LayerWeights::w_o, &LayerWeights::b_o, &LayerWeights::q_norm, &LayerWeights::k_norm,
                   &LayerWeights::mlp_norm, &LayerWeights::mlp_norm_bias, &LayerWeights::attn_post_norm,
                   &LayerWeights::mlp_post_norm, &LayerWeights::w_gate, &LayerWeights::b_gate,
                   &LayerWeights::w_up, &LayerWeights::b_up, &LayerWeights::w_down,
                   &LayerWeights::b_down, &LayerWeights::cross_norm, &LayerWeights::cross_norm_bias,
                   &LayerWeights::w_cq, &LayerWeights::w_ck, &LayerWeights::w_cv, &LayerWeights::w_co,
                   &LayerWeights::attn_sinks, &LayerWeights::router, &LayerWeights::router_bias,
                   &LayerWeights::experts_gate_up, &LayerWeights::experts_gate_up_bias,
                   &LayerWeights::experts_down, &LayerWeights::experts_down_bias, &LayerWeights::router_score_bias,
                   &LayerWeights::w_q_a, &LayerWeights::q_a_norm, &LayerWeights::w_kv_a, &LayerWeights::kv_a_norm,
                   &LayerWeights::w_kv_b, &LayerWeights::per_layer_gate, &LayerWeights::per_layer_projection,
                   &LayerWeights::per_layer_norm, &LayerWeights::layer_scalar, &LayerWeights::router_scale,
                   &LayerWeights::per_expert_scale, &LayerWeights::shared_expert_post_norm,
                   &LayerWeights::experts_norm, &LayerWeights::experts_post_norm})
      add(l->*f);
  for (const auto* pe : {&w.pe, &w.encoder_pe}) {
    for (const auto& layer : pe->layers)
      for (const auto& [name, t] : layer) add(t);
    for (const auto& [name, t] : pe->shared) add(t);
  }
  add(w.encoder_final_norm);
  add(w.encoder_final_norm_bias);
  add(w.final_norm);
  add(w.final_norm_bias);
  for (const auto* t : {&w.head_dense, &w.head_dense_bias, &w.head_norm, &w.head_norm_bias}) add(*t);
  add(w.unembed);
  add(w.unembed_bias);
  return total;
}

ModelWeights load_weights(const TensorSource& source, const WeightTable& table,
                          const ModelConfig& config, c10::Device device, c10::ScalarType dtype,
                          const LoadProgressFn& progress) {
  std::map<std::string, const TensorInfo*> stored;
  for (const auto& info : source.tensors()) stored[info.name] = &info;
  std::set<std::string> used;

  // A hostile or mistaken config (num_hidden_layers: 1000000000) must fail on the file's
  // contents, not by allocating a billion layers: the last layer's first required tensor has to
  // exist before any layer is made.
  const auto layers_of = [&](const WeightRule& rule) { return rule.encoder ? config.n_encoder_layers : config.n_layers; };
  for (const bool encoder : {false, true})
    for (const auto& rule : table.rules)
      if (has_layer(rule.pattern) && !rule.optional && rule.encoder == encoder && rule.only_layers.empty()) {
        const int64_t n = layers_of(rule);
        const auto last = alternatives(with_expert(with_layer(rule.pattern, n - 1), 0)).front();
        if (!stored.count(last))
          throw Error("missing tensor " + last + " in " + source.describe() + " (the config says " +
                      std::to_string(n) + (encoder ? " encoder" : "") + " layers)");
        break;
      }

  ModelWeights weights;
  weights.layers.resize(static_cast<size_t>(config.n_layers));
  weights.pe.layers.resize(static_cast<size_t>(config.n_layers));
  weights.pe.device = device;
  weights.encoder_layers.resize(static_cast<size_t>(config.n_encoder_layers));
  weights.encoder_pe.layers.resize(static_cast<size_t>(config.n_encoder_layers));
  weights.encoder_pe.device = device;

  // Progress counts stored tensors: the rules expanded over the layers (and experts).
  int64_t total = 0;
  for (const auto& rule : table.rules)
    total += (has_layer(rule.pattern) ? static_cast<int64_t>(rule_layers(rule, layers_of(rule)).size()) : 1) *
             stored_count(rule.pattern, config.n_experts);
  // One stored tensor, its shape checked, as the source holds it (possibly its memory map).
  auto read = [&](const WeightRule& rule, const std::string& name) -> at::Tensor {
    const auto it = stored.find(name);
    if (it == stored.end()) throw Error("missing tensor " + name + " in " + source.describe());
    if (it->second->shape != rule.stored_shape)
      throw Error("expected " + shape_str(rule.stored_shape) + ", got " +
                  shape_str(it->second->shape) + " for " + name + " in " + source.describe());
    used.insert(name);
    if (progress && !progress(static_cast<int64_t>(used.size()) - 1, total))
      throw Cancelled();
    return source.load(name);
  };
  // The tensor a rule's `name` ({L} replaced) stands for, in the runtime layout on `device`.
  auto fetch = [&](const WeightRule& rule, const std::string& name) -> at::Tensor {
    if (rule.optional && !stored.count(name)) return {};
    if (has_experts(name) && config.n_experts > 0) {  // before a billion experts are named
      const auto last = alternatives(with_expert(name, config.n_experts - 1)).front();
      if (!stored.count(last))
        throw Error("missing tensor " + last + " in " + source.describe() + " (the config says " +
                    std::to_string(config.n_experts) + " experts)");
    }
    std::vector<std::string> names;
    // One expert (or the one tensor) with its parts concatenated, in `dtype`.
    auto expert = [&](int64_t e) {
      std::vector<at::Tensor> parts;
      for (const auto& part : alternatives(with_expert(name, e))) {
        parts.push_back(read(rule, part).to(dtype));
        names.push_back(part);
      }
      return parts.size() == 1 ? parts.front() : torch::cat(parts, 0);
    };
    at::Tensor t = expert(0);
    if (has_experts(name)) {
      // Stacked into one block made up front, each expert copied in and its pages released at
      // once: no second full set of experts, and no freed per-expert blocks between weights.
      auto sizes = t.sizes().vec();
      sizes.insert(sizes.begin(), config.n_experts);
      auto stacked = torch::empty(sizes, t.options());
      for (int64_t e = 0; e < config.n_experts; ++e) {
        stacked[e].copy_(e == 0 ? t : expert(e));
        for (const auto& n : names) source.release(n);
        names.clear();
      }
      t = stacked;
    }
    if (rule.transpose) t = t.t();
    if (rule.to_runtime) t = rule.to_runtime(t);
    t = t.contiguous().to(device);
    // Weights never alias the source's memory or tensors: the model outlives the opened file and
    // owns its weights. A tensor the source made for this call (dequantised) is kept as it is: a
    // copy would leave a hole of its size in the heap set_up_compute keeps, one per weight.
    if (t.device().is_cpu() && !is_private_block(t)) t = t.clone();
    // Copied: the mapped pages may go, so loading holds the file and the weights at once
    // only one rule's tensors at a time.
    for (const auto& n : names) source.release(n);
    return t;
  };

  for (const auto& rule : table.rules) {
    if (!has_layer(rule.pattern)) {
      at::Tensor t = fetch(rule, rule.pattern);
      if (!t.defined()) continue;
      if (!rule.pe_name.empty())
        (rule.encoder ? weights.encoder_pe : weights.pe).shared[rule.pe_name] = t;
      else
        weights.*rule.model_target = t;
      continue;
    }
    for (const int64_t l : rule_layers(rule, layers_of(rule))) {
      at::Tensor t = fetch(rule, with_layer(rule.pattern, l));
      if (!t.defined()) continue;
      auto& layer = (rule.encoder ? weights.encoder_layers : weights.layers)[static_cast<size_t>(l)];
      if (!rule.pe_name.empty()) {
        (rule.encoder ? weights.encoder_pe : weights.pe).layers[static_cast<size_t>(l)][rule.pe_name] = t;
      } else if (rule.layer_targets.size() == 1 || rule.split == WeightRule::Split::Shared) {
        for (const auto target : rule.layer_targets) layer.*target = t;
      } else {
        const auto parts = split_fused(t, rule, with_layer(rule.pattern, l));
        for (size_t i = 0; i < parts.size(); ++i)
          layer.*rule.layer_targets[i] = parts[i].contiguous();
      }
    }
  }

  for (auto& layer : weights.layers)
    for (const auto f : {&LayerWeights::experts_gate_up, &LayerWeights::experts_down})
      if ((layer.*f).defined()) layer.*f = experts_in_gemm_layout(layer.*f);

  // Known tensors we do not need (causal-mask buffers, cached rotary tables).
  for (const auto& pattern : table.ignored) {
    if (!has_layer(pattern)) {
      used.insert(pattern);
      continue;
    }
    for (int64_t l = 0; l < std::max(config.n_layers, config.n_encoder_layers); ++l)
      used.insert(with_layer(pattern, l));
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

namespace {

/// The inverse of split_fused: the stored tensor from its parts.
at::Tensor join_fused(const std::vector<at::Tensor>& parts, const WeightRule& rule) {
  if (rule.split == WeightRule::Split::Shared) return parts.front();
  if (rule.split == WeightRule::Split::Chunk) return torch::cat(parts, 0);
  // PerHead: part i is row block i of every head; stack them back per head.
  const auto n = static_cast<int64_t>(parts.size());
  const int64_t heads = rule.split_heads, rows = parts.front().size(0);
  std::vector<at::Tensor> grouped;
  for (const auto& p : parts) {
    auto shape = p.sizes().vec();
    shape[0] = rows / heads;
    shape.insert(shape.begin(), heads);
    grouped.push_back(p.reshape(shape));
  }
  auto joined = torch::stack(grouped, 1);  // [heads, n, rows/heads, ...]
  auto shape = parts.front().sizes().vec();
  shape[0] = rows * n;
  return joined.reshape(shape);
}

}  // namespace

std::vector<std::pair<std::string, at::Tensor>> table_tensors(const WeightTable& table,
                                                              const ModelConfig& config,
                                                              const ModelWeights& weights) {
  std::vector<std::pair<std::string, at::Tensor>> out;
  auto store = [&](const WeightRule& rule, const std::string& name, at::Tensor t) {
    if (!t.defined()) {
      if (rule.optional) return;
      throw Error("weight table: the model has no tensor for " + name);
    }
    if (rule.to_runtime || name.find('{') != std::string::npos)
      throw Error("weight table: " + name + " cannot be written back in its stored layout");
    out.emplace_back(name, rule.transpose ? t.t() : t);
  };
  for (const auto& rule : table.rules) {
    if (rule.encoder) throw Error("weight table: encoder tensors cannot be written back yet (" + rule.pattern + ")");
    if (!has_layer(rule.pattern)) {
      const at::Tensor t = !rule.pe_name.empty()
                               ? (weights.pe.shared.count(rule.pe_name) ? weights.pe.shared.at(rule.pe_name)
                                                                        : at::Tensor())
                               : weights.*rule.model_target;
      store(rule, rule.pattern, t);
      continue;
    }
    for (const int64_t l : rule_layers(rule, config.n_layers)) {
      const auto name = with_layer(rule.pattern, l);
      const auto& layer = weights.layers.at(static_cast<size_t>(l));
      if (!rule.pe_name.empty()) {
        const auto& map = weights.pe.layers.at(static_cast<size_t>(l));
        const auto it = map.find(rule.pe_name);
        store(rule, name, it == map.end() ? at::Tensor() : it->second);
      } else if (rule.layer_targets.size() == 1) {
        store(rule, name, layer.*rule.layer_targets.front());
      } else {
        std::vector<at::Tensor> parts;
        for (const auto target : rule.layer_targets) parts.push_back(layer.*target);
        // Transposed fused tensors were split after the transpose; join, then undo it.
        store(rule, name, join_fused(parts, rule));
      }
    }
  }
  return out;
}

}  // namespace poslens
