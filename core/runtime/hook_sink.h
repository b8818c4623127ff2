#pragma once
// Where a forward pass hands its hook points (docs/architecture.md "Long inputs"):
// per-position hooks ([batch, pos, ...]) whole, once; map hooks ([batch, head, q_pos, k_pos])
// in blocks of whole query rows as attention makes them, so nothing needs [layer, head, T, T].
// A sink keeps what it needs: everything (Captures, capture_sink.h), some heads, a max-pooled
// image, per-head sums, the last row, or an HDF5 file it streams to (analysis/… and
// core/runtime/sinks.h have them).
#include <vector>

#include <ATen/core/Tensor.h>

#include "core/runtime/attention.h"
#include "core/runtime/hook_points.h"

namespace poslens {

/// True for the [batch, head, q_pos, k_pos] hooks (scores, pattern, position scores, CoPE).
bool is_map_hook(HookKind kind);
/// What a map holds where a key is hidden from a query: −inf for hook_attn_scores (as fed to
/// the softmax), 0 for the others.
float masked_value(HookKind kind);

/// A block of whole query rows of one map hook: rows [q_begin, q_begin + rows) of a
/// [batch, head, length, key_length] map, keys [k_begin, k_begin + keys); every key hidden
/// from those rows outside the block holds masked_value().
struct MapBlock {
  at::Tensor values;   ///< float32 [batch, head, rows, keys] on the model's device
  at::Tensor allowed;  ///< bool [rows, keys]: which entries a query may see
  int64_t q_begin = 0, k_begin = 0;
  int64_t length = 0;      ///< query positions T
  int64_t k_length = 0;    ///< key positions: T for self-attention, the encoder's for cross; 0 = T
  int64_t rows() const { return values.size(2); }
  int64_t keys() const { return values.size(3); }
  int64_t key_length() const { return k_length > 0 ? k_length : length; }
};

class HookSink {
 public:
  virtual ~HookSink() = default;
  /// Whether the forward should produce `point` for this sink. Map hooks nobody wants are
  /// never computed as maps (the layer streams its keys instead).
  virtual bool wants(const HookPoint& point) const = 0;
  /// Called first: the pass runs `batch` sequences of `length` positions (an encoder–decoder
  /// model: the decoder's; its encoder hooks come whole with their own length).
  virtual void begin(int64_t batch, int64_t length) {
    (void)batch;
    (void)length;
  }
  /// Positions [pos_begin, pos_begin + value.size(1)) of a per-position hook ([batch, pos,
  /// ...]) on the model's device and dtype: logits come in chunks of positions (the whole
  /// [batch, T, vocab] can be GBs), the other hooks whole (pos_begin 0). The forward never
  /// modifies a tensor after handing it out, so a sink may keep it as is.
  virtual void tensor(const HookPoint& point, const at::Tensor& value, int64_t pos_begin) {
    (void)point;
    (void)value;
    (void)pos_begin;
  }
  /// A block of a map hook. The blocks of one hook and layer arrive in ascending row order
  /// and cover every row once; the hooks of one block arrive together, in the order
  /// hook_attn_scores, hook_pos_scores, hook_cope_gates, hook_cope_pos, hook_pattern.
  virtual void block(const HookPoint& point, const MapBlock& block) {
    (void)point;
    (void)block;
  }
  /// Whether to receive attention_inputs() for `layer` (what its maps are recomputed from).
  virtual bool wants_attention_inputs(int layer) const {
    (void)layer;
    return false;
  }
  virtual void attention_inputs(const LayerAttentionInputs& inputs) { (void)inputs; }
  /// After every hook of block `layer` was delivered; -1 after the model-level hooks that end
  /// the pass (ln_final, logits).
  virtual void layer_done(int layer) { (void)layer; }
};

/// Hands every hook to several sinks; each gets what it wants.
class SinkFanout : public HookSink {
 public:
  explicit SinkFanout(std::vector<HookSink*> sinks) : sinks_(std::move(sinks)) {}
  bool wants(const HookPoint& point) const override;
  void begin(int64_t batch, int64_t length) override;
  void tensor(const HookPoint& point, const at::Tensor& value, int64_t pos_begin) override;
  void block(const HookPoint& point, const MapBlock& block) override;
  bool wants_attention_inputs(int layer) const override;
  void attention_inputs(const LayerAttentionInputs& inputs) override;
  void layer_done(int layer) override;

 private:
  std::vector<HookSink*> sinks_;
};

}  // namespace poslens
