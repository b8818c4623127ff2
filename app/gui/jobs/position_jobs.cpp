// One head's pattern and position-only map for the Position map panel (analysis/position_map.h,
// position_only.h), recomputed from what the input's attention is computed from and max-pooled
// to the view: the cost is one head's T², never every head's.
#include "app/gui/worker_context.h"

#include "app/gui/jobs/jobs.h"

#include <QObject>

#include <cmath>
#include <limits>

#include "analysis/heatmap_pooling.h"
#include "analysis/position_map.h"
#include "core/base/error.h"
#include "core/runtime/model_input.h"

namespace poslens::gui {
namespace {

/// A pooled map as the view draws it: token labels on both axes, a title.
HeatmapData view_map(const at::Tensor& pooled, const AttentionState& s, int layer, int head,
                     HeatmapKind kind, const std::string& value_name, const std::string& what) {
  const int64_t T = static_cast<int64_t>(s.ids.size());
  auto map = heatmap_from_pooled(pooled, T, T);
  label_head_map(map, s, layer, head, 0, T, 0, T, what);
  map.value_name = value_name;
  map.kind = kind;
  return map;
}

/// A learned sink's share of each row (PositionMapKind::SinkShare, pooled [side, 1]) as the
/// column beside the pattern, the query tokens on its rows. No key ids: the read-out names the
/// query alone.
HeatmapData sink_column(const at::Tensor& pooled, const AttentionState& s, int layer, int head) {
  auto column = sink_share_heatmap(pooled, static_cast<int64_t>(s.ids.size()));
  for (const auto& label : s.labels) column.row_labels.push_back(display_label(label));
  column.layer = layer;
  column.head = head;
  return column;
}

/// The tokens a CoPE head counts, highest mean gate first.
void add_counting(PositionView& view, const LoadedModel& loaded, const CopeCounting& c) {
  const auto gates = c.mean_gate_per_token[0][0];
  const auto order = gates.argsort(0, /*descending=*/true);
  for (int64_t i = 0; i < order.size(0); ++i) {
    const int64_t t = order[i].item<int64_t>();
    const int64_t id = c.token_ids[static_cast<size_t>(t)];
    CountedToken token;
    token.token = QString::fromStdString(display_label(token_labels(loaded, {id})[0]));
    token.id = static_cast<int>(id);
    token.mean_gate = gates[t].item<float>();
    token.count = static_cast<int>(c.token_counts[static_cast<size_t>(t)]);
    if (i < 12)
      view.counted << QStringLiteral("%1   %2   ×%3").arg(token.token).arg(token.mean_gate, 0, 'f', 2).arg(token.count);
    view.counted_tokens.push_back(token);
  }
}

}  // namespace

Work positions_job(const RunInput& input, int layer, int head, int cells, int probe_samples) {
  return [input, layer, head, cells, probe_samples](WorkerContext& ctx) -> std::any {
    const auto& loaded = ctx.model();
    const auto& cfg = loaded.model->config();
    if (layer < 0 || layer >= cfg.n_layers || head < 0 || head >= cfg.n_heads)
      throw Error("no layer " + std::to_string(layer) + ", head " + std::to_string(head));
    const auto& pe = loaded.model->position_encoding(layer);
    const auto& progress = ctx.progress();
    const auto& s = ctx.attention(input, progress.part(0, 0.2, "forward"));
    const int64_t T = static_cast<int64_t>(s.ids.size());
    // The position-only logits of this length (the rotary probe runs once per T).
    auto& entry = ctx.cached("position-only:" + std::to_string(T) + ":" + std::to_string(probe_samples),
                             [&]() -> std::any {
                               PositionMapOptions options;
                               options.probe_samples = probe_samples;
                               return std::make_shared<const PositionOnlyLogits>(
                                   loaded, T, options, progress.part(0.2, 0.7, "probe"));
                             });
    const auto& logits = *std::any_cast<std::shared_ptr<const PositionOnlyLogits>>(entry);

    const LayerAttention attention(loaded.model->layer_config(layer), pe, s.layers[static_cast<size_t>(layer)], head, 1);
    BlockRequest what;
    what.pattern = true;
    what.position = logits.needs_position_term();
    what.cope = pe.has_cope();
    PooledPositionMaps maps(T, cells);
    auto gate_sums = torch::zeros({1, 1, T}, torch::kDouble), visible = torch::zeros({T}, torch::kDouble);
    double sink_mass = 0.0;  // Σ over rows of 1 − Σ_j p_ij: what a learned sink takes (gpt-oss)
    const int64_t rows = attention.block_rows({});
    for (int64_t q0 = 0; q0 < T; q0 += rows) {
      const int64_t q1 = std::min(T, q0 + rows);
      const auto b = attention.rows(q0, q1, what);
      maps.add({PositionMapKind::Pattern, layer, head, q0, b.k_begin, T, row_max_normalised(b.pattern[0][0]), b.allowed});
      if (cfg.attention_sinks) {
        const auto share = sink_share_column(b.pattern[0][0]);
        sink_mass += share.sum().item<double>();
        maps.add({PositionMapKind::SinkShare, layer, head, q0, 0, T, share, torch::ones_like(share, torch::kBool)});
      }
      const auto l = logits.logits(layer, head, q0, q1, b.k_begin, b.k_end,
                                   what.position ? b.position[0][0] : at::Tensor());
      maps.add({PositionMapKind::PositionOnly, layer, head, q0, b.k_begin, T,
                row_normalised_softmax(l, b.allowed), b.allowed});
      if (what.cope) {
        gate_sums[0][0].narrow(0, b.k_begin, b.k_end - b.k_begin) += b.cope_gates[0][0].sum(0).to(torch::kCPU, torch::kDouble);
        visible.narrow(0, b.k_begin, b.k_end - b.k_begin) += b.allowed.sum(0).to(torch::kCPU, torch::kDouble);
      }
      progress.part(0.9, 0.1, "maps").step(q1, T);
    }

    PositionView view;
    view.layer = layer;
    view.head = head;
    // A NoPE layer of a rotary model (SmolLM3, Cohere 2) has only its mask.
    const bool nope_layer = logits.method() == "rotary" && !pe.rotates();
    const std::string layer_method = nope_layer ? "NoPE layer: the mask alone" : logits.method();
    view.method = QString::fromStdString(layer_method);
    view.explanation = QString::fromStdString(logits.explanation());
    // A learned sink's share is the mass the rows do not give to any key.
    const std::string pattern_title =
        cfg.attention_sinks ? "attention pattern (the learned sink takes " +
                                  std::to_string(static_cast<int>(std::lround(100.0 * sink_mass / static_cast<double>(T)))) +
                                  "% of a row on average)"
                            : "attention pattern";
    view.pattern = view_map(maps.find(PositionMapKind::Pattern, layer, head), s, layer, head,
                            HeatmapKind::Probability, "weight / row max", pattern_title);
    view.position = view_map(maps.find(PositionMapKind::PositionOnly, layer, head), s, layer, head,
                             HeatmapKind::Probability, "weight / row max",
                             "position only (" + layer_method + ")");
    if (cfg.attention_sinks) view.sink = sink_column(maps.find(PositionMapKind::SinkShare, layer, head), s, layer, head);
    if (logits.method() == "absolute" && layer == 0) {
      PooledPositionMaps pooled(T, cells);
      absolute_term_blocks(loaded, loaded.model->embed(torch::tensor(s.ids).unsqueeze(0))[0], {head},
                           [&](const PositionMapBlock& block) { pooled.add(block); });
      for (const auto& [kind, name] :
           {std::pair{PositionMapKind::TokenToken, "token–token"}, {PositionMapKind::TokenPosition, "token–position"},
            {PositionMapKind::PositionToken, "position–token"}, {PositionMapKind::PositionPosition, "position–position"},
            {PositionMapKind::Bias, "bias terms"}})
        view.absolute_terms.push_back(view_map(pooled.find(kind, 0, head), s, layer, head, HeatmapKind::Signed,
                                               "logit term", std::string(name) + " term"));
    }
    if (what.cope) add_counting(view, loaded, cope_counting_from_sums(gate_sums, visible, s.ids));
    return view;
  };
}

}  // namespace poslens::gui
