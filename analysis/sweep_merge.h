#pragma once
// `poslens-cli merge`: the items of a sweep (docs/sweeps.md) in one HDF5 file, by copy (not
// HDF5 virtual datasets: a merged file must stay whole when it is moved off the cluster without
// its item files).
#include <string>
#include <vector>

namespace poslens {

/// One finished item of a sweep.
struct MergeItem {
  std::string file;        ///< its HDF5 output
  std::string checkpoint;  ///< the checkpoint it ran on
  std::string analysis;    ///< the subcommand (probe, heads, …)
  std::vector<std::string> options;
};

/// Writes `out`: `/items/NNNN/` holds item N's file (its /analysis and /tokens groups, its
/// root attributes — checkpoint, weights_sha256, … — on the group, plus `analysis`,
/// `checkpoint`, `options`, `step`). When every item is a probe with one shape, also the
/// series as `compare --series` writes it: `/analysis/compare/{vaf [checkpoint, layer,
/// component], checkpoints, steps, weights_sha256, scores, components, theta, activated}`
/// (steps from the step-NNNNNN folder names, -1 elsewhere), so the VAF table is the same.
/// Atomic. Throws poslens::Error naming the item whose file is missing, unreadable or of
/// another shape than the first probe's.
void merge_sweep(const std::vector<MergeItem>& items, const std::string& out);

}  // namespace poslens
