#pragma once
// The U-shape probe on several models side by side (Chen et al. 2024 §4.1, Fig. 1: learned absolute
// positions, RoPE and KERPLE each learn a U-shaped attention over key position, not a global
// long-term decay). Each model runs the probe of probe.h — [BOS] + one token repeated,
// the last query's pre-softmax logit to every key, averaged over tokens — and its head mean
// per layer is kept. Any position encoding: nothing here needs rotary components.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "analysis/curve_data.h"
#include "analysis/probe.h"
#include "core/formats/hdf5_export.h"
#include "core/formats/hdf5_reader.h"
#include "core/runtime/checkpoint.h"

namespace poslens {

struct UShapes {
  std::vector<std::string> checkpoints;  ///< [model] paths as given
  std::vector<std::string> encodings;    ///< [model] position encoding, described
  std::vector<std::string> weights_sha256;
  int64_t T = 0;                         ///< probe length (keys per curve)
  int64_t n_samples = 0;                 ///< tokens averaged per model
  /// Mean over heads and samples of the last query's logit to each key, float64
  /// [model, layer, key_pos] (as hook_attn_scores: scale and position terms included).
  at::Tensor scores;
  ExportMetadata meta;  ///< the first model's, for the file's root attributes
};

/// Runs the probe (options.per_component is ignored: no components are kept) on each
/// checkpoint in turn, one in memory at a time; `progress(done, total)` counts samples over all
/// models. Throws poslens::Error for fewer than 2 checkpoints, models with different layer
/// counts (each curve is per layer) or any error run_probe throws.
UShapes compare_u_shapes(const std::vector<std::string>& paths, const LoadOptions& load, ProbeOptions options,
                         const std::function<bool(int64_t, int64_t)>& progress = {});

/// The curves of layer `layer` (-1: every layer), one per model and layer, against key
/// position. Standardised per curve ((y − mean) / std over keys 1..T−1): the models' logits
/// live on different scales, the shape is what Fig. 1 compares. The BOS key 0, often a sink
/// tens of standard deviations away, is NaN (not drawn; its logit is in the file and the CSV).
/// Colour per model, dash per layer.
CurveSet u_shape_curves(const UShapes& u, int layer, const std::string& title);

/// Where each curve has its minimum over keys 1..T−1, float64 [model, layer]: 0 at key 1, 1 at
/// key T−1; near 0 for a global long-term decay (the farthest key gets the least), well
/// inside (0, 1) for a U (the initial keys rise again, Chen et al. 2024 §4.1).
at::Tensor u_shape_minimum_position(const UShapes& u);

/// The raw head-mean logits as CSV: a column key_pos, then one per model and layer
/// ("NAME L0", NAME as checkpoint_label() gives it).
std::string u_shape_csv(const UShapes& u);

/// `/analysis/u_shape/{scores [model, layer, key_pos] (float64 logits), minimum [model, layer]}`
/// with attributes `checkpoints`, `encodings`, `weights_sha256` (lists, per model), `T`,
/// `n_samples`; u.meta as root attributes. Atomic. Throws poslens::Error.
void write_u_shape_hdf5(const std::string& path, const UShapes& u);
/// What write_u_shape_hdf5 wrote (not meta). Throws poslens::Error naming the file for another
/// PosLens version's file (check_analysis_file_version) or shapes that do not fit.
UShapes read_u_shape_hdf5(const Hdf5Reader& file);

}  // namespace poslens
