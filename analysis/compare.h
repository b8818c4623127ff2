#pragma once
// The U-shape probe over several checkpoints of one model (Chen et al. 2024 Fig. 2a: VAF per component
// against training step): same tokens, same T, one checkpoint in memory at a time.
#include <string>
#include <vector>

#include "analysis/checkpoint_series.h"
#include "analysis/probe.h"
#include "core/formats/hdf5_export.h"

namespace poslens {

/// The probe over several checkpoints (Chen et al. 2024 Fig. 2a).
struct CompareResult {
  std::vector<std::string> names;  ///< checkpoint paths as given
  std::vector<int64_t> steps;      ///< training step per checkpoint, -1 where unknown
  std::vector<std::string> weights_sha256;  ///< per checkpoint (LoadedModel::weights_sha256)
  std::vector<ProbeResult> probes; ///< one per checkpoint, same tokens and T
  at::Tensor vaf;                  ///< float32 [checkpoint, layer, component]
  ExportMetadata meta;             ///< of the first checkpoint (for the HDF5 root attributes)
};

/// Loads each checkpoint in turn (only one in memory), probes it with the same tokens and
/// stacks the VAF. `progress(done, total)` counts samples over all checkpoints. Throws
/// poslens::Error for fewer than 2 checkpoints or ones whose layers, heads or components differ.
CompareResult compare_checkpoints(const std::vector<std::string>& paths,
                                  const LoadOptions& load, const ProbeOptions& options,
                                  const std::function<bool(int64_t, int64_t)>& progress = {});

}  // namespace poslens
