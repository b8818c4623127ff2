#pragma once
// Position-only attention (docs/formulas.md §3; Golovneva et al. 2024 Fig. 4): each head's pattern beside the
// attention it would pay from position alone (position_only.h says how, per method), both
// row-max normalised; what CoPE heads count (the mean gate per key and per token, Golovneva et al. 2024
// Figs. 4, 6); absolute models' layer-0 logit terms (absolute_terms.h).
//
// Streamed (docs/position-maps.md): one forward pass hands its blocks of whole rows to a sink
// that turns each selected head's rows into its two maps and hands them on (to an HDF5 file,
// a pooled image, a figure); CoPE counting keeps per-key sums. Nothing holds [layer, head, T,
// T]: memory is the forward's plus one block, and, for rotary models, the U-shape probe's
// N forward passes of T tokens run first (PositionOnlyLogits).
#include <functional>
#include <map>
#include <tuple>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "analysis/absolute_terms.h"
#include "analysis/position_only.h"
#include "analysis/progress.h"
#include "core/runtime/capture_sink.h"
#include "core/runtime/checkpoint.h"

namespace poslens {

/// The maps position_map() hands out.
enum class PositionMapKind {
  Pattern,       ///< hook_pattern, rows scaled to max 1
  PositionOnly,  ///< the position-only attention, rows scaled to max 1
  TokenToken, TokenPosition, PositionToken, PositionPosition, Bias,  ///< absolute_terms.h, layer 0
  /// The learned sink's share of each query row, 1 − Σ_j p_ij (ModelConfig::attention_sinks,
  /// gpt-oss; OpenAI 2025, arXiv 2508.10925 §2.1): a column [rows, 1] (k_begin 0) beside the
  /// pattern, for models with learned sinks only.
  SinkShare,
};
/// The name in files: "pattern", "position_map", "token_token", ..., "bias", "sink_share".
const char* to_string(PositionMapKind kind);

/// A block of whole rows [q_begin, q_begin + rows) of one head's map: `values` float32
/// [rows, keys] on the model's device for keys [k_begin, k_begin + keys), `allowed` bool
/// [rows, keys]; keys outside are hidden. The two attention maps are 0 where hidden; the
/// absolute terms are logits everywhere (unmasked).
struct PositionMapBlock {
  PositionMapKind kind = PositionMapKind::Pattern;
  int layer = 0, head = 0;
  int64_t q_begin = 0, k_begin = 0;
  int64_t length = 0;  ///< T
  at::Tensor values, allowed;
};
using PositionMapConsumer = std::function<void(const PositionMapBlock&)>;

struct CopeCounting {
  /// Mean gate g_ij over the queries that see key j, float32 [layer, head, k_pos].
  at::Tensor mean_gate_per_key;
  /// The same averaged over the keys of each token type, float32 [layer, head, token_type].
  at::Tensor mean_gate_per_token;
  std::vector<int64_t> token_ids;     ///< [token_type], in order of first appearance
  std::vector<int64_t> token_counts;  ///< [token_type], occurrences in the input
};

struct PositionMapResult {
  std::vector<int64_t> ids;
  std::vector<std::string> labels;
  std::vector<std::string> methods;  ///< per layer: PositionOnlyLogits::method()
  std::string explanation;           ///< one line for the view: what the map is for this model
  std::optional<CopeCounting> cope;
  /// position_map_whole() only: float32 [layer, head, q_pos, k_pos], each row scaled to max 1,
  /// 0 where masked; and layer 0's absolute terms [head, q_pos, k_pos].
  at::Tensor position_map, pattern;
  /// position_map_whole() only, models with learned sinks: float32 [layer, head, q_pos], the
  /// sink's share of each row (PositionMapKind::SinkShare); else undefined.
  at::Tensor sink_share;
  std::optional<AbsoluteTerms> absolute;
};

/// Runs `model` on `ids` (a batch of one) and hands every map block of the heads `heads` selects
/// (all when empty; absolute terms for the selected heads of layer 0) to `maps`, as described
/// above; CoPE counting covers every head. `progress` runs once over the probe (rotary models),
/// the forward pass and the absolute terms. Throws poslens::Error for bad ids or heads,
/// poslens::Cancelled, and whatever `maps` throws.
PositionMapResult position_map(const LoadedModel& model, const std::vector<int64_t>& ids,
                               const PositionMapOptions& options,
                               const std::optional<HeadSelection>& heads,
                               const PositionMapConsumer& maps, const Progress& progress = {});

/// position_map() for every head with the maps kept whole in the result: 2 × 4·L·H·T² bytes,
/// for small inputs (tests, the CLI figure of a short text).
PositionMapResult position_map_whole(const LoadedModel& model, const std::vector<int64_t>& ids,
                                     const PositionMapOptions& options = {},
                                     const Progress& progress = {});

/// Layer 0's absolute-PE terms (Kernes 2021's four terms and the bias terms; analysis/absolute_terms.h)
/// of `heads`, streamed as TokenToken … Bias blocks of at most ~32 MB to `maps`. `embed` is the
/// token embedding float [T, d_model] of the input. Unmasked logits (`allowed` says what attention
/// would see). `progress` steps once per head. Throws poslens::Cancelled and what `maps` throws.
void absolute_term_blocks(const LoadedModel& model, const at::Tensor& embed, const std::vector<int64_t>& heads,
                          const PositionMapConsumer& maps, const Progress& progress = {});

/// The learned sink's share of each row of a block of whole rows: 1 − Σ_j p_ij of `pattern`
/// [rows, keys] (probabilities, the model's dtype), as float32 [rows, 1] on its device, ≥ 0.
at::Tensor sink_share_column(const at::Tensor& pattern);

/// Max-pools position-map blocks as they arrive, per (kind, layer, head), to at most `cells`
/// per side (max_pool_block in core/runtime/map_pooling.h): what a view draws, what --pool writes.
/// SinkShare columns pool their rows alike, to [side, 1].
class PooledPositionMaps {
 public:
  PooledPositionMaps(int64_t T, int64_t cells);
  int64_t stride() const { return stride_; }
  int64_t side() const { return side_; }
  /// Pools `block` in. True when it held its map's last row (that map is complete).
  bool add(const PositionMapBlock& block);
  /// The map of (kind, layer, head): float32 CPU [side, side] ([side, 1] for SinkShare), NaN
  /// where every entry was hidden; undefined when no block of it came. take() also forgets it,
  /// so a long run keeps only the maps still being made.
  at::Tensor find(PositionMapKind kind, int layer, int head) const;
  at::Tensor take(PositionMapKind kind, int layer, int head);

 private:
  int64_t T_, stride_, side_;
  std::map<std::tuple<PositionMapKind, int, int>, at::Tensor> maps_;  ///< −inf: nothing visible yet
};

/// The method position_map() uses for each layer of `model` on a `T`-token input (without
/// running the probe).
std::vector<std::string> position_methods(const LoadedModel& model, int64_t T);

/// CoPE counting from per-key gate sums: `gate_sums` float [layer, head, k_pos] (Σ over the
/// queries of g_ij), `visible` [k_pos] (how many queries see key j) and the ids.
CopeCounting cope_counting_from_sums(const at::Tensor& gate_sums, const at::Tensor& visible,
                                     const std::vector<int64_t>& ids);

/// The same from whole gates [layer, head, q, k] (0 where masked) and `allowed` [q, k].
CopeCounting cope_counting(const at::Tensor& gates, const at::Tensor& allowed,
                           const std::vector<int64_t>& ids);

}  // namespace poslens
