#pragma once
// Frequency usage (Barbero et al. 2024, "Round and Round We Go! What makes Rotary Positional
// Encodings useful?", arXiv 2410.06205, §5 and Fig. 4): per layer, head and rotary component c,
// the mean over the input's positions of the norm of the 2-D chunks ‖q⁽ᶜ⁾‖ and ‖k⁽ᶜ⁾‖ that
// component c rotates, in the model's own pairing (interleaved (2c, 2c+1), half-split
// (c, c + rotary_dim/2)). Rotation keeps a chunk's norm, so the norms are those before
// rotation (divided by the attention factor where YaRN/LongRoPE scale cos and sin). High-
// frequency components a head uses carry positional patterns; its lowest frequencies carry
// content ("semantic channels"). Streamed from each layer's attention inputs.
#include <cstdint>
#include <optional>
#include <vector>

#include <ATen/core/Tensor.h>

#include "analysis/progress.h"
#include "core/position/position_encoding.h"
#include "core/runtime/checkpoint.h"
#include "core/runtime/hook_sink.h"

namespace poslens {

struct FrequencyUsage {
  at::Tensor q_norm;  ///< float64 [layer, head, component]: mean_t ‖q_t⁽ᶜ⁾‖
  at::Tensor k_norm;  ///< float64 [layer, kv_head, component]: mean_t ‖k_t⁽ᶜ⁾‖
  RotaryInfo rotary;  ///< theta_c (radians per position), pairing, HoPE's kept count
  int64_t L = 0;      ///< training length (probe.h training_length()) for the markers; 0: unknown
  /// float64 [layer, component]: q_norm and k_norm averaged over heads — the layer × frequency
  /// summary.
  at::Tensor q_layer_mean() const;
  at::Tensor k_layer_mean() const;
};

/// Mean 2-D chunk norms of `x` (float [batch, head, pos, d_head], as LayerAttentionInputs's q or
/// k) over batch and positions: float64 [head, rotary_dim/2], chunks paired as `rotary` says,
/// divided by its attention factor. Throws poslens::Error when d_head or rotary_dim disagree
/// with `x`.
at::Tensor chunk_norms(const at::Tensor& x, const RotaryInfo& rotary);

/// Collects chunk_norms() of every layer's q and k from the forward's attention inputs.
class FrequencyUsageSink : public HookSink {
 public:
  /// `layer_rotary`: each layer's own rotation where the layers differ (per-layer schemes: a
  /// local base, another attention factor), empty for a NoPE layer, whose rows stay NaN (its
  /// pairs never turn); empty: every layer rotates by `rotary`.
  FrequencyUsageSink(int64_t n_layers, int64_t n_heads, int64_t n_kv_heads, RotaryInfo rotary,
                     std::vector<std::optional<RotaryInfo>> layer_rotary = {});
  bool wants(const HookPoint&) const override { return false; }
  bool wants_attention_inputs(int) const override { return true; }
  void attention_inputs(const LayerAttentionInputs& inputs) override;
  FrequencyUsage result() const { return usage_; }

 private:
  FrequencyUsage usage_;
  std::vector<std::optional<RotaryInfo>> layer_rotary_;
};

/// One forward pass of a rotary model over `ids` (a batch of one). `progress` counts layers.
/// Models whose layers differ: each layer's chunks by its own rotation (its attention factor),
/// NoPE layers NaN; `rotary` (the θ axis of the views) is the global layers', or the layer with
/// the most components where layers rotate different numbers (Gemma 4: its global layers' wider
/// heads); components and KV heads a layer does not have are NaN.
/// Throws poslens::Error for a model without rotary components (RoPE, HoPE, partial or scaled
/// RoPE have them), an encoder–decoder model, empty or bad ids; poslens::Cancelled.
FrequencyUsage compute_frequency_usage(const LoadedModel& model, const std::vector<int64_t>& ids,
                                       const Progress& progress = {});

}  // namespace poslens
