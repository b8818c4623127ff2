#pragma once
// Sinks that keep a small part of the map hooks while a forward pass streams them
// (hook_sink.h): a max-pooled image per head (what a view draws) and the last query's row (what
// the U-shape probe reads). Both are O(head · cells²) or O(head · T), never O(head · T²).
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "core/runtime/capture_sink.h"
#include "core/runtime/hook_sink.h"
#include "core/runtime/map_pooling.h"

namespace poslens {

/// Max-pools the map hooks `spec` wants, as their blocks arrive, to at most `cells` × `cells`
/// per head: with stride s = ceil(T / cells) (1 when T <= cells, the rule of pool_heatmap in
/// analysis/heatmap_pooling.h), cell (r, c) is the max over query rows [r·s, (r+1)·s) and keys
/// [c·s, (c+1)·s), hidden entries ignored; a cell with only hidden entries is NaN. With
/// `heads`, only the selected heads of each layer are kept.
class PooledMapSink : public HookSink {
 public:
  /// Throws poslens::Error if cells < 1.
  PooledMapSink(CaptureSpec spec, int64_t cells, std::optional<HeadSelection> heads = {});
  bool wants(const HookPoint& point) const override;
  void begin(int64_t batch, int64_t length) override;
  void block(const HookPoint& point, const MapBlock& block) override;

  /// Rows (and columns) of the source map per pooled cell, after begin(), for maps as long as
  /// the pass (T × T).
  int64_t stride() const { return stride_; }
  /// The stride of `point`'s map: pool_stride(max(query, key length), cells); stride() for a
  /// map not made yet.
  int64_t stride_of(const HookPoint& point) const;
  /// The pooled maps in the order their first blocks came: float32 CPU [batch, head,
  /// ceil(T/s), ceil(T/s)], NaN where every entry was hidden.
  std::vector<std::pair<HookPoint, at::Tensor>> maps() const;

 private:
  CaptureSpec spec_;
  int64_t cells_;
  std::optional<HeadSelection> heads_;
  int64_t stride_ = 1, length_ = 0;
  std::vector<std::pair<HookPoint, at::Tensor>> maps_;  // −inf where nothing visible yet
  std::map<HookPoint, int64_t> strides_;
};

/// Keeps what every layer's attention is computed from (LayerAttentionInputs, in layer order,
/// into `out`): what LayerAttention recomputes any head's rows from (the GUI's head maps, the
/// pattern divergence's first model). Every layer's q and k are copied into one allocation made
/// at the first layer, so that what is kept does not sit between each layer's freed temporaries
/// and pin their holes (docs/performance.md); v is kept only with `keep_values` (encodings whose
/// scores read values). O(layer · T · d).
class AttentionInputsSink : public HookSink {
 public:
  AttentionInputsSink(std::vector<LayerAttentionInputs>& out, int64_t n_layers, bool keep_values)
      : out_(out), n_layers_(n_layers), keep_values_(keep_values) {}
  bool wants(const HookPoint&) const override { return false; }
  bool wants_attention_inputs(int) const override { return true; }
  void attention_inputs(const LayerAttentionInputs& inputs) override;

 private:
  /// `x` copied into layer `layer` of `all` ([layer, ...x's shape], made on first use).
  at::Tensor into(at::Tensor& all, const at::Tensor& x, int layer) const;

  std::vector<LayerAttentionInputs>& out_;
  int64_t n_layers_;
  bool keep_values_;
  at::Tensor q_all_, k_all_;
};

/// Keeps the last query's row of the map hooks `spec` wants: float32 CPU [batch, head, T] per
/// hook, hidden keys holding masked_value() (−inf for hook_attn_scores, else 0).
class LastRowSink : public HookSink {
 public:
  explicit LastRowSink(CaptureSpec spec) : spec_(std::move(spec)) {}
  bool wants(const HookPoint& point) const override { return is_map_hook(point.kind) && spec_.wants(point); }
  void block(const HookPoint& point, const MapBlock& block) override;
  /// The row of `point`, or undefined if it was not seen.
  at::Tensor find(const HookPoint& point) const;

 private:
  CaptureSpec spec_;
  std::vector<std::pair<HookPoint, at::Tensor>> rows_;
};

/// The selected heads of `values` [batch, head, ...] for `layer` (all when `heads` is empty).
at::Tensor select_heads(const at::Tensor& values, const std::optional<HeadSelection>& heads, int layer);

}  // namespace poslens
