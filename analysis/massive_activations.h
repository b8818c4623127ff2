#pragma once
// Massive activations (Sun et al. 2024, "Massive Activations in Large Language Models",
// arXiv 2402.17762, §2): a few entries of the residual stream, on a few tokens (the first,
// delimiters) and a few fixed dimensions, are 10³–10⁴ times the median magnitude. Per layer,
// the largest |h| of blocks.{l}.hook_resid_post over positions × dimensions, where they sit,
// and the median |h| — the paper's Fig. 2 (top-1/2/3 magnitudes against the median, per
// layer). Streamed: one layer's [pos, d_model] at a time.
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "analysis/progress.h"
#include "core/runtime/checkpoint.h"
#include "core/runtime/hook_sink.h"
#include "core/runtime/massive_entries.h"  // the criterion: kMassiveAbsolute, kMassiveRatio

namespace poslens {

struct MassiveActivations {
  at::Tensor top_values;     ///< float64 [layer, k]: the k entries of largest |h|, signed, largest first
  at::Tensor top_positions;  ///< int64 [layer, k]: their token positions
  at::Tensor top_dims;       ///< int64 [layer, k]: their residual dimensions
  at::Tensor median;         ///< float64 [layer]: median |h| over every position and dimension
  /// bool [layer, k]: Sun et al.'s criterion (§2): |h| > 100 and |h| > 1000 · median.
  at::Tensor massive;
  /// The calibration of "massive=mean" (ModelConfig::massive_means; Sun et al. §3): at
  /// means_layer, the first layer whose output has massive entries by the runtime's criterion
  /// (massive_entries over every position and dimension), float64 [d_model]: the mean of each
  /// dimension's massive entries, NaN where it has none. Undefined (means_layer −1) when no
  /// layer has any.
  at::Tensor means;
  int64_t means_layer = -1;
};

/// The top-`k` |h| entries and the median |h| of each layer's hook_resid_post, in the model's
/// dtype converted to float32. `ids` is a batch of one. Memory: one layer's [T, d_model].
class MassiveActivationSink : public HookSink {
 public:
  MassiveActivationSink(int64_t n_layers, int64_t top_k);
  bool wants(const HookPoint& point) const override;
  void tensor(const HookPoint& point, const at::Tensor& value, int64_t pos_begin) override;
  MassiveActivations result() const;

 private:
  int64_t n_layers_, top_k_;
  at::Tensor values_, positions_, dims_, median_;
  at::Tensor means_;          // MassiveActivations::means, once found
  int64_t means_layer_ = -1;
};

/// The top-k entries of `h` (float [pos, d_model]) by magnitude — (signed values, positions,
/// dims), largest first, k clipped to the entry count — and the median |h| (the lower of the
/// two middle values for an even count, as torch.median). Throws poslens::Error for a tensor
/// that is not 2-D or is empty, or k < 1.
struct LayerExtremes {
  at::Tensor values, positions, dims;  ///< float64, int64, int64 [k]
  double median = 0.0;
};
LayerExtremes layer_extremes(const at::Tensor& h, int64_t k);

/// One forward pass of `model` (a decoder- or encoder-only model) over `ids` with the sink.
/// `progress` counts layers. Throws poslens::Error for empty or bad ids, an encoder–decoder
/// model, k < 1; poslens::Cancelled.
MassiveActivations compute_massive_activations(const LoadedModel& model, const std::vector<int64_t>& ids,
                                               int64_t top_k, const Progress& progress = {});

}  // namespace poslens
