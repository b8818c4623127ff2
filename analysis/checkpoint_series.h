#pragma once
// The checkpoints of a training run folder (docs/training.md: `step-NNNNNN/` model folders).
// Plain std types: the GUI's main window reads it without LibTorch.
#include <cstdint>
#include <string>
#include <vector>

namespace poslens {

/// The step of a `step-NNNNNN` folder name (the trainer's), -1 for any other name.
int64_t step_from_name(const std::string& name);

/// A checkpoint's name in legends and tables: its folder's name, with the run folder's for a
/// run's step-NNNNNN checkpoints ("rope-seed0/step-001500"), which all share their own names.
std::string checkpoint_label(const std::string& checkpoint);

/// The checkpoints of a run folder: its `step-NNNNNN` subfolders in step order. Throws
/// poslens::Error when `folder` is not a folder or holds none.
std::vector<std::string> series_checkpoints(const std::string& folder);

}  // namespace poslens
