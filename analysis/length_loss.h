#pragma once
// Length generalisation (docs/analyses.md; HoPE Chen et al. 2024 §5, Kazemnejad et al. 2023): the loss
// at each position of real text for inputs up to k·L, averaged over windows, for several
// checkpoints and for RoPE scaling applied at run time (none, linear/PI, NTK, YaRN, llama3)
// without editing the checkpoint: what `poslens-cli length-loss` computes.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "analysis/progress.h"
#include "core/runtime/checkpoint.h"

namespace poslens {

/// The loss at each position of one model on one text.
struct LossCurve {
  std::string name;   ///< checkpoint (and scaling), for legends
  at::Tensor loss;    ///< float64 [T − 1]: mean over windows of −ln p(t_{i+1} | t_0..t_i) at position i, nats
  int64_t windows = 0;
};

/// The HF `rope_scaling` object (JSON text) for a run-time scaling `spec`: "none" (""),
/// "linear:F" (position interpolation, Chen et al. 2023), "ntk:F" (HF "dynamic" NTK-aware),
/// "yarn:F" (Peng et al. 2023; α = 1, β = 32) or "llama3:F" (low/high frequency factors 1 and
/// 4), each extending training length `L` by the factor F > 0. Throws poslens::Error for
/// another spec.
std::string rope_scaling_json(const std::string& spec, int64_t L);

/// `model` with every RoPE component's rope_scaling replaced by `scaling_json` (empty: none),
/// sharing its weights — the checkpoint is not touched. Throws poslens::Error when the model
/// has no RoPE component or the scaling does not apply (rope_scaling.h's checks).
std::unique_ptr<Transformer> with_rope_scaling(const Transformer& model, const std::string& scaling_json);

/// Per-position loss of `model` over windows of `T` tokens of `ids` (non-overlapping, from the
/// start; at most `max_windows`, 0: all): each window starts with `bos` when bos ≥ 0 (then it
/// holds T − 1 tokens of text). The logits stream in chunks of positions (nothing of size
/// T × vocab is kept). `progress` counts windows. Throws poslens::Error when `ids` holds fewer
/// than one window or T < 2; poslens::Cancelled.
LossCurve per_position_loss(const Transformer& model, const std::vector<int64_t>& ids, int64_t T,
                            int64_t max_windows, int64_t bos, const Progress& progress = {});

}  // namespace poslens
