#include "analysis/position_map.h"

#include <torch/torch.h>

#include <algorithm>
#include <limits>
#include <map>

#include "analysis/rope_probe.h"
#include "core/base/error.h"
#include "core/runtime/run.h"

namespace poslens {
namespace {

/// f(i − j) as a [head, T, T] map from per-distance values `by_distance` [head, T] (index d).
at::Tensor distance_map(const at::Tensor& by_distance, int64_t T) {
  const auto i = torch::arange(T, torch::kLong).unsqueeze(1);
  const auto j = torch::arange(T, torch::kLong).unsqueeze(0);
  const auto d = (i - j).clamp_min(0).flatten();
  return by_distance.index_select(-1, d).view({by_distance.size(0), T, T});
}

/// One hook of every layer of `run`, batch 0, stacked: [layer, head, q, k].
at::Tensor stacked(const RunResult& run, HookKind kind, int64_t n_layers) {
  std::vector<at::Tensor> out;
  for (int l = 0; l < n_layers; ++l) out.push_back(run.captures.find({kind, l})[0]);
  return torch::stack(out);
}

/// The capture of `point` moved out of `run` (batch 0), so that it is freed once used: at 4096
/// tokens one hook of every layer is GBs, and keeping the captures beside what is made of them
/// doubled the peak.
at::Tensor take(RunResult& run, const HookPoint& point) {
  at::Tensor out;
  for (auto& [p, tensor] : run.captures.tensors)
    if (p == point) std::swap(out, tensor);
  if (!out.defined()) throw Error("internal: hook " + point.name() + " not captured");
  return out[0];
}

/// [layer, head, q, k] float32 from `make(layer, head)` ([q, k] each), filled one head at a
/// time so that temporaries stay one head's size.
at::Tensor per_head(int64_t n_layers, int64_t n_heads, int64_t T,
                    const std::function<at::Tensor(int64_t, int64_t)>& make) {
  auto out = torch::empty({n_layers, n_heads, T, T});
  for (int64_t l = 0; l < n_layers; ++l)
    for (int64_t h = 0; h < n_heads; ++h) out[l][h].copy_(make(l, h));
  return out;
}

}  // namespace

std::vector<std::string> position_methods(const LoadedModel& loaded, int64_t T) {
  const auto& pe = loaded.model->position_encoding();
  const bool rotary = pe.rotary_info(T).has_value() && T >= 2;
  std::string method;
  if (pe.has_position_scores())
    method = std::string(pe.has_cope() ? "cope" : "additive") + (rotary ? "+rotary" : "");
  else if (rotary)
    method = "rotary";
  else if (!pe.has_pe_state() && pe.position_table(1).defined())
    method = "absolute";
  else
    method = "uniform";
  return std::vector<std::string>(static_cast<size_t>(loaded.model->config().n_layers), method);
}

at::Tensor row_normalised_softmax(const at::Tensor& logits, const at::Tensor& allowed) {
  const auto masked = logits.to(torch::kFloat).masked_fill(allowed.logical_not(),
                                                            -std::numeric_limits<float>::infinity());
  auto p = torch::softmax(masked, -1);
  p = torch::nan_to_num(p, 0.0);  // rows without an allowed key
  return row_max_normalised(p);
}

at::Tensor row_max_normalised(const at::Tensor& pattern) {
  const auto p = pattern.to(torch::kFloat);
  const auto max = std::get<0>(p.max(-1, true));
  return torch::where(max > 0, p / max.clamp_min(1e-30), torch::zeros_like(p));
}

CopeCounting cope_counting(const at::Tensor& gates, const at::Tensor& allowed,
                           const std::vector<int64_t>& ids) {
  const int64_t T = static_cast<int64_t>(ids.size());
  if (gates.dim() != 4 || gates.size(2) != T || gates.size(3) != T)
    throw Error("cope_counting: gates must be [layer, head, " + std::to_string(T) + ", " +
                std::to_string(T) + "]");
  const auto mask = allowed.to(torch::kFloat);
  const auto g = gates.to(torch::kFloat) * mask;
  CopeCounting out;
  out.mean_gate_per_key = g.sum(2) / mask.sum(0).clamp_min(1);  // [L, H, T]
  std::map<int64_t, size_t> type_of;
  std::vector<std::vector<int64_t>> positions;
  for (int64_t k = 0; k < T; ++k) {
    const auto [it, fresh] = type_of.emplace(ids[static_cast<size_t>(k)], out.token_ids.size());
    if (fresh) {
      out.token_ids.push_back(ids[static_cast<size_t>(k)]);
      positions.emplace_back();
    }
    positions[it->second].push_back(k);
  }
  std::vector<at::Tensor> per_type;
  for (const auto& where : positions) {
    out.token_counts.push_back(static_cast<int64_t>(where.size()));
    per_type.push_back(
        out.mean_gate_per_key.index_select(-1, torch::tensor(where, torch::kLong)).mean(-1));
  }
  out.mean_gate_per_token = torch::stack(per_type, -1);
  return out;
}

PositionMapResult position_map(const LoadedModel& loaded, const std::vector<int64_t>& ids,
                               const PositionMapOptions& options,
                               const std::function<bool(int64_t, int64_t)>& progress) {
  const Transformer& model = *loaded.model;
  const auto& cfg = model.config();
  const auto& pe = model.position_encoding();
  const int64_t T = static_cast<int64_t>(ids.size());
  if (T == 0) throw Error("no tokens to map (the input is empty)");
  PositionMapResult r;
  r.methods = position_methods(loaded, T);
  const std::string& method = r.methods.front();
  const bool additive = pe.has_position_scores();
  const bool cope = pe.has_cope();
  const bool rotary = pe.rotary_info(T).has_value() && T >= 2;
  const bool absolute = method == "absolute";

  std::vector<std::string> hooks = {"blocks.*.attn.hook_pattern"};
  if (additive) hooks.push_back("blocks.*.attn.hook_pos_scores");
  if (cope) hooks.push_back("blocks.*.attn.hook_cope_gates");
  if (absolute) hooks.insert(hooks.end(), {"hook_embed", "hook_pos_embed"});
  auto run = run_model(loaded, ids, CaptureSpec(hooks), [&](int done, int total) {
    return !progress || progress(done, total);
  });
  c10::InferenceMode guard;
  const auto allowed = allowed_keys(cfg, T, torch::kCPU);

  r.ids = run.ids;
  r.labels = run.labels;
  {
    at::Tensor layer;  // the capture being consumed, freed when the next layer starts
    r.pattern = per_head(cfg.n_layers, cfg.n_heads, T, [&](int64_t l, int64_t h) {
      if (h == 0) layer = take(run, {HookKind::Pattern, static_cast<int>(l)});
      return row_max_normalised(layer[h]);
    });
    if (cope)
      r.cope = cope_counting(per_head(cfg.n_layers, cfg.n_heads, T, [&](int64_t l, int64_t h) {
                               if (h == 0) layer = take(run, {HookKind::CopeGates, static_cast<int>(l)});
                               return layer[h];
                             }),
                             allowed, r.ids);
  }

  // The rotary part by distance, [layer, head, T] indexed by distance d = i − j.
  at::Tensor rotary_by_distance;
  if (rotary) {
    ProbeOptions probe;
    probe.length = T;
    probe.samples = options.probe_samples;
    probe.seed = options.seed;
    const auto p = run_probe(loaded, probe, progress);
    auto by_key = p.components.sum(2);  // rotary part only: CoPE's term comes from this input
    if (p.remainder.defined()) by_key = by_key + p.remainder;
    if (!additive) by_key = p.scores;
    rotary_by_distance = by_key.flip(-1);  // key T−1−d is at distance d from the last query
  }

  const auto pos_embed = absolute ? run.captures.find({HookKind::PosEmbed, -1}) : at::Tensor();
  at::Tensor layer_logits;  // [head, q, k] of the layer being mapped
  r.position_map = per_head(cfg.n_layers, cfg.n_heads, T, [&](int64_t l, int64_t h) {
    if (h == 0) {
      if (additive)
        layer_logits = take(run, {HookKind::PosScores, static_cast<int>(l)});  // freed once used
      else if (absolute)
        layer_logits = model.qk_logits(static_cast<int>(l), pos_embed).to(torch::kCPU)[0];
    }
    at::Tensor logits;  // [q, k]
    if (additive) {
      logits = layer_logits[h];
      if (rotary) logits = logits + distance_map(rotary_by_distance[l].slice(0, h, h + 1), T)[0];
    } else if (rotary) {
      logits = distance_map(rotary_by_distance[l].slice(0, h, h + 1), T)[0];
    } else if (absolute) {
      logits = layer_logits[h];
    } else {
      logits = torch::zeros({T, T});
    }
    return row_normalised_softmax(logits, allowed);
  });

  const std::string& m = method;
  r.explanation =
      m == "uniform"
          ? "No position-only term (" + pe.describe() +
                "): uniform over the keys each query may see"
      : m == "absolute"
          ? "Absolute positions: each layer fed the position embeddings alone (no tokens) "
            "through its attention norm and q/k projections, softmax(scale·q(P_i)·k(P_j)); "
            "exact for layer 0"
      : m == "rotary"
          ? "Rotary: softmax of f(i−j), the head's mean logit by distance from the U-shape "
            "probe ([BOS] + one token repeated, T = the input length)"
          : "Position term as it enters the logits (hook_pos_scores" +
                std::string(cope ? ", CoPE's z_i[p_ij] for this input's contextual positions" : "") +
                ")" + (rotary ? " plus the rotary part from the U-shape probe" : "") +
                ", softmax over allowed keys";
  r.explanation += "; each row scaled to max 1";

  if (absolute)
    r.absolute = absolute_terms(model, run.captures.find({HookKind::Embed, -1})[0],
                                run.captures.find({HookKind::PosEmbed, -1})[0]);
  return r;
}

}  // namespace poslens
