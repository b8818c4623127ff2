#pragma once
// One forward pass from ids to captures and its HDF5 export, shared by poslens-cli and the GUI
// worker. The input (ids, text, labels) is model_input.h; the predictions, predictions.h.
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "core/formats/hdf5_export.h"
#include "core/runtime/checkpoint.h"
#include "core/runtime/hook_points.h"
#include "core/runtime/transformer.h"

namespace poslens {

struct RunResult {
  std::vector<int64_t> ids;           ///< the input, [pos] (batch of one)
  std::vector<std::string> labels;    ///< token_labels(ids)
  std::vector<std::string> pieces;    ///< token_pieces(ids)
  Captures captures;                  ///< what the CaptureSpec selected
  at::Tensor logits;                  ///< float32 [1, pos, vocab] on the model's device
};

/// Runs the model on `ids` as a batch of one. Throws poslens::Error for a capture pattern that
/// matches no hook point of this model or bad ids, poslens::Cancelled from `progress`.
RunResult run_model(const LoadedModel& model, const std::vector<int64_t>& ids,
                    const CaptureSpec& spec, const ProgressFn& progress = {});

/// The root attributes of every file PosLens writes about `model` (tool version, config JSON,
/// checkpoint path, device, dtype).
ExportMetadata export_metadata(const LoadedModel& model);

/// Writes the captures of `run` as HDF5 (hdf5_export.h layout) with the model's metadata.
void export_run(const std::string& path, const LoadedModel& model, const RunResult& run);

}  // namespace poslens
