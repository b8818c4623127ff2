#pragma once
// poslens-cli position-map and heads: position-only attention beside the real pattern, what
// CoPE counts, the absolute-PE decomposition, and per-head metrics (docs/position-maps.md).
#include <string>

#include "app/cli/commands.h"

namespace poslens::cli {

struct PositionMapCommand {
  RunOptions input;          ///< text or tokens
  int64_t probe_samples = 64;  ///< rotary models: tokens of the U-shape probe (0: all)
  uint64_t seed = 0;
  std::string out;           ///< .h5 (position-map), .h5 or .csv (heads)
  std::string figure;        ///< position-map: pattern | position-only map of (layer, head)
  int layer = 0, head = 0;
};
/// `position-map`: /analysis/position_map, /analysis/pattern (+ cope, absolute_terms).
void position_map(const CommonOptions& common, const PositionMapCommand& command);
/// `heads`: entropy, mean distance, sink, previous token and position share per head.
void heads(const CommonOptions& common, const PositionMapCommand& command);

}  // namespace poslens::cli
