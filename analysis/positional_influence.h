#pragma once
// positional-influence: how much can each source position still move the last token's state?
// For every layer l and source position i, the Frobenius norm of the Jacobian
//     I_l(i) = ‖∂h^l_{T−1} / ∂x_i‖_F,
// where x_i is the input embedding at position i (hook_embed: after any model-specific scaling,
// before absolute position embeddings and norms, which it enters additively or through the
// layer's norm) and h^l_{T−1} is the last position's residual stream after layer l
// (blocks.{l}.hook_resid_post). This is the sensitivity of Barbero et al. 2024 ("Transformers
// need glasses! Information over-squashing in language tasks", arXiv 2406.04267, §4: ‖∂y_n/∂v_i‖
// against i) and of Barbero et al. 2025 ("Why do LLMs attend to the first token?", arXiv
// 2504.02732, §3), per layer: how far back a position can still change what the last token
// computes, and how much the first token dominates.
// Computed by autograd through the model's own forward (gradients only for the input
// embeddings): one vector–Jacobian product uᵀ J gives uᵀ J_i for every i at once, so
//   - exact (probes = 0): u runs over the d_model unit vectors, ‖J_i‖²_F = Σ_k ‖e_kᵀ J_i‖²;
//     d_model products per layer;
//   - estimated (probes = K): u ~ N(0, I), E‖uᵀ J_i‖² = ‖J_i‖²_F (Hutchinson 1990; Girard 1989),
//     averaged over K draws with a fixed seed; K products per layer.
// Each (layer, u) pair is one copy of the input in a batch: one batched forward and one backward
// serve as many pairs as fit (influence_batch: ≈ 2 GiB of autograd graph), so the cost is about
// layers · (d_model or K) forward-and-backward passes of one input.
// Memory: the autograd graph keeps each layer's attention probabilities, O(copies · layers ·
// heads · T²) floats, unlike every other PosLens analysis (docs/analyses.md "Positional
// influence" has the peak RSS at several T). Meant for T up to the training length.
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "analysis/analysis_files.h"
#include "analysis/analysis_result.h"
#include "analysis/progress.h"
#include "core/formats/hdf5_reader.h"
#include "core/runtime/checkpoint.h"

namespace poslens {

/// The analysis's HDF5 group (docs/hdf5-layout.md).
inline constexpr char kPositionalInfluenceGroup[] = "/analysis/positional_influence";

struct PositionalInfluence {
  /// float32 [layer, pos]: ‖∂h^l_{T−1} / ∂x_i‖_F (exact, or its probe estimate).
  at::Tensor influence;
  int64_t probes = 0;  ///< 0: exact (d_model unit vectors); K: K Gaussian probes
  uint64_t seed = 0;   ///< the probes' seed
  /// Wall-clock seconds of the whole computation and of one plain forward of the same input
  /// (no gradients) measured in the same call: the cost as a multiple of a forward. Zero when
  /// read from a file written without them.
  double seconds = 0, forward_seconds = 0;
};

struct PositionalInfluenceOptions {
  /// 0: exact; K ≥ 1: K Gaussian probes. −1: exact when d_model ≤ kExactInfluenceWidth, else
  /// kInfluenceProbes probes (what the registry's run uses).
  int64_t probes = -1;
  uint64_t seed = 0;
};

/// Up to this d_model the default is exact; above it, kInfluenceProbes Gaussian probes.
inline constexpr int64_t kExactInfluenceWidth = 256;
inline constexpr int64_t kInfluenceProbes = 32;

/// I_l(i) for every layer and position of `ids` (a batch of one) of a decoder- or encoder-only
/// model, in the model's compute dtype; `progress` counts (layer, u) pairs. The weights are not
/// touched (the embedding table is an alias that requires grad). Throws poslens::Error for
/// fewer than two ids, bad ids, an encoder–decoder model, probes < −1, a forward that is not
/// differentiable, or (on the CPU) one copy's graph estimate beyond the available memory;
/// poslens::Cancelled.
PositionalInfluence compute_positional_influence(const LoadedModel& model, const std::vector<int64_t>& ids,
                                                 const PositionalInfluenceOptions& options = {},
                                                 const Progress& progress = {});

/// `/analysis/positional_influence/{influence [layer, pos] float32, seconds [2] float64 (the
/// whole computation, one plain forward)}`, attributes `probes`, `seed`, `measure`; `/tokens`;
/// `meta` at the root. Atomic.
void write_positional_influence_hdf5(const std::string& path, const PositionalInfluence& p,
                                     const AnalysisInput& input, const ExportMetadata& meta);
/// What write_positional_influence_hdf5 wrote. Throws poslens::Error naming the file for another
/// PosLens version's file or an influence dataset that is not [layer, pos].
PositionalInfluence read_positional_influence_hdf5(const Hdf5Reader& file);
/// `layer,position,distance,token,influence`, one row per layer and position (distance: T − 1 − i).
std::string positional_influence_csv(const PositionalInfluence& p, const std::vector<std::string>& labels);

/// The views: I_l against the distance T − 1 − i from the last token, one curve per layer, on a
/// log axis; the summary gives, for the last layer, the share of influence the last token has on
/// itself, the first token's share of the rest, the distance within which half of the rest lies,
/// and the cost as a multiple of one forward. `name` is the checkpoint's short name.
AnalysisResult positional_influence_result(const PositionalInfluence& p, const AnalysisInput& input,
                                           const std::string& name);
/// The registry's `run` (default probes) and `read` (analysis_registry.h).
AnalysisResult run_positional_influence(const LoadedModel& model, const AnalysisInput& input,
                                        const Progress& progress);
AnalysisResult read_positional_influence(const Hdf5Reader& file);

}  // namespace poslens
