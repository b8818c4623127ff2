#include "analysis/position_map.h"

#include <torch/torch.h>

#include <algorithm>
#include <limits>
#include <map>

#include "core/base/error.h"
#include "core/runtime/model_input.h"
#include "core/runtime/sinks.h"

namespace poslens {
namespace {

/// The heads of `layer` that get maps: the selection's, or all.
std::vector<int64_t> selected(const std::optional<HeadSelection>& heads, int layer, int64_t n_heads) {
  if (heads) return heads_of_layer(*heads, layer);
  std::vector<int64_t> all(static_cast<size_t>(n_heads));
  for (int64_t h = 0; h < n_heads; ++h) all[static_cast<size_t>(h)] = h;
  return all;
}

/// Turns a forward pass's blocks into the selected heads' maps and CoPE's per-key gate sums.
/// A block's hooks arrive together, the position term before the pattern (hook_sink.h), so
/// the pattern's turn finds the rows' position term kept.
class PositionMapSink : public HookSink {
 public:
  PositionMapSink(const LoadedModel& model, const PositionOnlyLogits& logits,
                  const std::optional<HeadSelection>& heads, const PositionMapConsumer& maps)
      : model_(model), logits_(logits), heads_(heads), maps_(maps) {
    const auto& c = model.model->config();
    cope_ = model.model->position_encoding().has_cope();
    sinks_ = c.attention_sinks;
    absolute_ = logits.method() == "absolute" && !selected(heads, 0, c.n_heads).empty();
  }

  bool wants(const HookPoint& point) const override {
    const bool mapped = point.layer >= 0 &&
                        !selected(heads_, point.layer, model_.model->config().n_heads).empty();
    switch (point.kind) {
      case HookKind::Pattern: return mapped;
      case HookKind::PosScores: return mapped && logits_.needs_position_term();
      case HookKind::CopeGates: return cope_;
      case HookKind::Embed: return absolute_;
      default: return false;
    }
  }

  void begin(int64_t batch, int64_t length) override {
    (void)batch;
    const auto& c = model_.model->config();
    T_ = length;
    if (cope_) {
      gate_sums_ = torch::zeros({c.n_layers, c.n_heads, length}, torch::kFloat64);
      visible_ = torch::zeros({length}, torch::kFloat64);
    }
  }

  void tensor(const HookPoint& point, const at::Tensor& value, int64_t pos_begin) override {
    (void)pos_begin;
    if (point.kind == HookKind::Embed) embed_ = value[0];
  }

  void block(const HookPoint& point, const MapBlock& b) override {
    const int layer = point.layer;
    if (point.kind == HookKind::PosScores) {
      position_ = b.values;
      return;
    }
    if (point.kind == HookKind::CopeGates) {
      gate_sums_[layer].narrow(1, b.k_begin, b.keys()) +=
          b.values[0].sum(1).to(torch::kCPU, torch::kFloat64);
      if (layer == 0)
        visible_.narrow(0, b.k_begin, b.keys()) += b.allowed.sum(0).to(torch::kCPU, torch::kFloat64);
      return;
    }
    const int64_t q1 = b.q_begin + b.rows(), k1 = b.k_begin + b.keys();
    for (const int64_t h : selected(heads_, layer, model_.model->config().n_heads)) {
      maps_({PositionMapKind::Pattern, layer, static_cast<int>(h), b.q_begin, b.k_begin, T_,
             row_max_normalised(b.values[0][h]), b.allowed});
      if (sinks_) {
        const auto column = sink_share_column(b.values[0][h]);
        maps_({PositionMapKind::SinkShare, layer, static_cast<int>(h), b.q_begin, 0, T_, column,
               torch::ones_like(column, torch::kBool)});
      }
      const auto logits = logits_.logits(layer, static_cast<int>(h), b.q_begin, q1, b.k_begin, k1,
                                         logits_.needs_position_term() ? position_[0][h] : at::Tensor());
      maps_({PositionMapKind::PositionOnly, layer, static_cast<int>(h), b.q_begin, b.k_begin, T_,
             row_normalised_softmax(logits, b.allowed), b.allowed});
    }
  }

  const at::Tensor& embed() const { return embed_; }
  const at::Tensor& gate_sums() const { return gate_sums_; }
  const at::Tensor& visible() const { return visible_; }

 private:
  const LoadedModel& model_;
  const PositionOnlyLogits& logits_;
  const std::optional<HeadSelection>& heads_;
  const PositionMapConsumer& maps_;
  bool cope_ = false, absolute_ = false, sinks_ = false;
  int64_t T_ = 0;
  at::Tensor position_, embed_, gate_sums_, visible_;
};

}  // namespace

const char* to_string(PositionMapKind kind) {
  switch (kind) {
    case PositionMapKind::Pattern: return "pattern";
    case PositionMapKind::PositionOnly: return "position_map";
    case PositionMapKind::TokenToken: return "token_token";
    case PositionMapKind::TokenPosition: return "token_position";
    case PositionMapKind::PositionToken: return "position_token";
    case PositionMapKind::PositionPosition: return "position_position";
    case PositionMapKind::Bias: return "bias";
    case PositionMapKind::SinkShare: return "sink_share";
  }
  return "?";
}

void absolute_term_blocks(const LoadedModel& model, const at::Tensor& embed, const std::vector<int64_t>& heads,
                          const PositionMapConsumer& maps, const Progress& progress) {
  const auto& c = model.model->config();
  const int64_t T = embed.size(0);
  const AbsoluteTermsBlocks blocks(*model.model, embed, model.model->position_encoding().position_table(T));
  // Rows per block: the five terms of one head take 5 · rows · T floats.
  const int64_t rows = std::clamp<int64_t>((int64_t{32} << 20) / (5 * T * 4), 1, T);
  for (size_t n = 0; n < heads.size(); ++n) {
    const int64_t h = heads[n];
    for (int64_t q0 = 0; q0 < T; q0 += rows) {
      const int64_t q1 = std::min(T, q0 + rows);
      const auto t = blocks.block(h, q0, q1, 0, T);
      const auto allowed = allowed_block(c, q0, q1, 0, T, model.model->device());
      for (const auto& [kind, values] :
           {std::pair{PositionMapKind::TokenToken, t.token_token}, {PositionMapKind::TokenPosition, t.token_position},
            {PositionMapKind::PositionToken, t.position_token}, {PositionMapKind::PositionPosition, t.position_position},
            {PositionMapKind::Bias, t.bias}})
        maps({kind, 0, static_cast<int>(h), q0, 0, T, values, allowed});
    }
    progress.step(static_cast<int64_t>(n + 1), static_cast<int64_t>(heads.size()));
  }
}

at::Tensor sink_share_column(const at::Tensor& pattern) {
  return (1.0 - pattern.to(torch::kFloat32).sum(-1, /*keepdim=*/true)).clamp_min(0.0);
}

PooledPositionMaps::PooledPositionMaps(int64_t T, int64_t cells)
    : T_(T), stride_(pool_stride(T, cells)), side_((T + stride_ - 1) / stride_) {}

bool PooledPositionMaps::add(const PositionMapBlock& b) {
  auto [it, fresh] = maps_.try_emplace({b.kind, b.layer, b.head});
  if (fresh) it->second = pooled_canvas({}, T_, b.kind == PositionMapKind::SinkShare ? 1 : T_, stride_);
  max_pool_block(it->second, b.values, b.allowed, b.q_begin, b.k_begin, stride_);
  return b.q_begin + b.values.size(0) == T_;
}

at::Tensor PooledPositionMaps::find(PositionMapKind kind, int layer, int head) const {
  const auto it = maps_.find({kind, layer, head});
  if (it == maps_.end()) return {};
  return finished_pooled(it->second);
}

at::Tensor PooledPositionMaps::take(PositionMapKind kind, int layer, int head) {
  auto map = find(kind, layer, head);
  maps_.erase({kind, layer, head});
  return map;
}

std::vector<std::string> position_methods(const LoadedModel& loaded, int64_t T) {
  return std::vector<std::string>(static_cast<size_t>(loaded.model->config().n_layers),
                                  position_only_method(loaded, T));
}

CopeCounting cope_counting_from_sums(const at::Tensor& gate_sums, const at::Tensor& visible,
                           const std::vector<int64_t>& ids) {
  const int64_t T = static_cast<int64_t>(ids.size());
  if (gate_sums.dim() != 3 || gate_sums.size(2) != T || visible.numel() != T)
    throw Error("cope_counting: gate sums must be [layer, head, " + std::to_string(T) + "]");
  CopeCounting out;
  out.mean_gate_per_key = (gate_sums.to(torch::kDouble) / visible.to(torch::kDouble).clamp_min(1))
                              .to(torch::kFloat);  // [L, H, T]
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

CopeCounting cope_counting(const at::Tensor& gates, const at::Tensor& allowed,
                           const std::vector<int64_t>& ids) {
  const int64_t T = static_cast<int64_t>(ids.size());
  if (gates.dim() != 4 || gates.size(2) != T || gates.size(3) != T)
    throw Error("cope_counting: gates must be [layer, head, " + std::to_string(T) + ", " +
                std::to_string(T) + "]");
  const auto mask = allowed.to(torch::kFloat);
  return cope_counting_from_sums((gates.to(torch::kFloat) * mask).sum(2), mask.sum(0), ids);
}

PositionMapResult position_map(const LoadedModel& loaded, const std::vector<int64_t>& ids,
                               const PositionMapOptions& options,
                               const std::optional<HeadSelection>& heads,
                               const PositionMapConsumer& maps, const Progress& progress) {
  require_one_stack(loaded, "The position map");
  const Transformer& model = *loaded.model;
  const int64_t T = static_cast<int64_t>(ids.size());
  if (T == 0) throw Error("no tokens to map (the input is empty)");
  for (const auto id : ids)
    if (id < 0 || id >= model.config().vocab_size)
      throw Error("token id " + std::to_string(id) + " is outside the vocabulary");
  PositionMapResult r;
  r.ids = ids;
  r.labels = token_labels(loaded, ids);
  r.methods = position_methods(loaded, T);
  const bool rotary = r.methods.front().find("rotary") != std::string::npos;
  const bool absolute = r.methods.front() == "absolute";
  // The probe is N forward passes, the map one: weigh the bar accordingly.
  const double probe_part = rotary ? 0.8 : 0.0, absolute_part = absolute ? 0.1 : 0.0;
  const PositionOnlyLogits logits(loaded, T, options, progress.part(0, probe_part, "probe"));
  r.explanation = logits.explanation();

  PositionMapSink sink(loaded, logits, heads, maps);
  {
    c10::InferenceMode inference;
    ForwardOptions forward;
    forward.logits = LogitsReturned::None;
    model.forward(torch::tensor(ids, torch::kLong).unsqueeze(0), sink,
                  progress.part(probe_part, 1 - probe_part - absolute_part, "forward").layers(), forward);
    if (model.position_encoding().has_cope()) r.cope = cope_counting_from_sums(sink.gate_sums(), sink.visible(), ids);
    const auto layer0 = selected(heads, 0, model.config().n_heads);
    if (absolute && !layer0.empty())
      absolute_term_blocks(loaded, sink.embed(), layer0, maps, progress.part(1 - absolute_part, absolute_part, "terms"));
  }
  return r;
}

PositionMapResult position_map_whole(const LoadedModel& loaded, const std::vector<int64_t>& ids,
                                     const PositionMapOptions& options, const Progress& progress) {
  const auto& c = loaded.model->config();
  const int64_t T = static_cast<int64_t>(ids.size());
  at::Tensor pattern, map, sink;
  std::map<PositionMapKind, at::Tensor> terms;
  auto r = position_map(
      loaded, ids, options, std::nullopt,
      [&](const PositionMapBlock& b) {
        if (b.kind == PositionMapKind::SinkShare) {
          if (!sink.defined()) sink = torch::zeros({c.n_layers, c.n_heads, T});
          sink[b.layer][b.head].narrow(0, b.q_begin, b.values.size(0)).copy_(b.values.squeeze(1).to(torch::kCPU));
          return;
        }
        at::Tensor* whole = b.kind == PositionMapKind::Pattern        ? &pattern
                            : b.kind == PositionMapKind::PositionOnly ? &map
                                                                      : &terms[b.kind];
        const bool per_layer = b.kind == PositionMapKind::Pattern || b.kind == PositionMapKind::PositionOnly;
        if (!whole->defined())
          *whole = per_layer ? torch::zeros({c.n_layers, c.n_heads, T, T}) : torch::zeros({c.n_heads, T, T});
        auto head = per_layer ? (*whole)[b.layer][b.head] : (*whole)[b.head];
        head.narrow(0, b.q_begin, b.values.size(0))
            .narrow(1, b.k_begin, b.values.size(1))
            .copy_(b.values.to(torch::kCPU, torch::kFloat32));
      },
      progress);
  r.pattern = pattern;
  r.position_map = map;
  r.sink_share = sink;
  if (!terms.empty())
    r.absolute = AbsoluteTerms{terms[PositionMapKind::TokenToken], terms[PositionMapKind::TokenPosition],
                               terms[PositionMapKind::PositionToken], terms[PositionMapKind::PositionPosition],
                               terms[PositionMapKind::Bias]};
  return r;
}

}  // namespace poslens
