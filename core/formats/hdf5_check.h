#pragma once
// Opening an HDF5 file that may be hostile. libhdf5 1.10 (Debian 12) reads out of bounds,
// asks for ~10^19 bytes or loops forever on some crafted files (found by fuzz_analysis_hdf5,
// docs/reliability.md), in calls any reader makes. PosLens cannot fix the library, so a file from
// outside is first read in a child process: if that crashes or hangs, the child dies and the
// program says so.
#include <functional>
#include <string>

#include "core/formats/hdf5_strings.h"

namespace poslens {

/// Reads everything Hdf5Reader could be asked for in the HDF5 file at `path` in a child process
/// (run_isolated): every group and dataset (at most 100 000 objects, 32 levels deep), every
/// string and integer attribute, every string dataset, and numeric data — whole datasets while
/// the total stays within `numeric_budget_bytes`, beyond it the first and last slice along the
/// first dimension of each (what a layer/head view reads). Returns when all of it read cleanly.
///
/// Throws poslens::Error "<path>: …" when a read fails (the reader's own message), when the
/// library crashed on the file ("… crashed the HDF5 library (Segmentation fault) …") or did not
/// finish within `timeout_s` seconds, and poslens::Cancelled when `cancelled` returns true.
/// A file that passes is then read in-process by Hdf5Reader given these strings. Its numeric
/// reads are the same as the child's; its string reads, the ones a corrupted global heap turns
/// into out-of-bounds reads whose outcome depends on the process, are not made again.
Hdf5Strings check_hdf5_in_child(const std::string& path, double timeout_s = 60,
                                const std::function<bool()>& cancelled = {},
                                long long numeric_budget_bytes = 256ll << 20);

}  // namespace poslens
