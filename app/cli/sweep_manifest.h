#pragma once
// A sweep's manifest (docs/sweeps.md): a JSON list of (checkpoint, analysis, options) items,
// each run as `poslens-cli ANALYSIS CHECKPOINT OPTIONS... --out DIR/items/item-NNNN.h5`.
//
//   {"items": [
//     {"checkpoint": "runs/a/step-000100", "analysis": "probe", "options": ["--length", "128"]},
//     {"series": "runs/a", "analysis": "probe", "options": ["--length", "128"]}
//   ]}
//
// "series" stands for every step-NNNNNN checkpoint of a run folder, in step order. Relative
// paths are relative to the manifest's folder. The expanded list (absolute checkpoints, one
// per item) is written to DIR/sweep.json; it is a manifest itself, which the Slurm array's
// tasks and `merge` read, so every task agrees on what item N is.
#include <cstdint>
#include <string>
#include <vector>

namespace poslens::cli {

struct SweepItem {
  std::string checkpoint;            ///< absolute path
  std::string analysis;              ///< a poslens-cli subcommand (sweep_analyses())
  std::vector<std::string> options;  ///< its options, without --out
};

/// The subcommands a sweep may run: the registry's analyses marked `sweep` (each takes one
/// checkpoint and writes one --out file), in registry order, then "run" (a capture file).
const std::vector<std::string>& sweep_analyses();

/// Reads and expands `path`. Throws poslens::Error naming the manifest and the item for
/// malformed JSON, an unknown analysis, a missing checkpoint or series, an option list that
/// is not strings or that sets --out itself, and an empty list.
std::vector<SweepItem> read_sweep_manifest(const std::string& path);

/// The expanded manifest as JSON text (what DIR/sweep.json holds).
std::string sweep_manifest_json(const std::vector<SweepItem>& items);

/// DIR/items/item-NNNN.h5 for item `index`.
std::string sweep_item_output(const std::string& dir, int64_t index);

}  // namespace poslens::cli
