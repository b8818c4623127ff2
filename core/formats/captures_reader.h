#pragma once
// Reading back the `/captures` group of a file `poslens-cli run` wrote (write_captures_hdf5, or
// HDF5 streaming sinks for long inputs; docs/hdf5-layout.md "/captures").
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "core/formats/hdf5_reader.h"

namespace poslens {

/// One captured hook: its TransformerLens name ("blocks.0.attn.hook_pattern") and shape.
struct CapturedHook {
  std::string name;
  std::vector<int64_t> shape;
};

/// The hooks under `/captures`, in the file's order; empty when the group is empty. Throws
/// poslens::Error naming the file when it has no `/captures` group.
std::vector<CapturedHook> read_captured_hooks(const Hdf5Reader& file);

/// One head of a captured attention map: float32 [rows, cols] (the T × T map, or max-pooled
/// blocks when the run pooled it, NaN where a block was all hidden) and the source length T
/// (the `source_length` attribute, else the rows).
struct CapturedHeadMap {
  at::Tensor values;
  int64_t source_length = 0;
};

/// Head `head` of batch 0 of `/captures/blocks.<layer>.attn.<hook>` (a [batch, head, q, k]
/// hook such as hook_pattern or hook_attn_scores); nullopt when the file did not capture that
/// hook or the head is outside it (the caller says which to choose instead). Throws
/// poslens::Error on an HDF5 failure.
std::optional<CapturedHeadMap> read_captured_head_map(const Hdf5Reader& file, int layer, const std::string& hook,
                                                      int head);

}  // namespace poslens
