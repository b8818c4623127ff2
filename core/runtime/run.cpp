#include "core/runtime/run.h"

#include <torch/torch.h>

#include "core/base/error.h"
#include "core/formats/hdf5_export.h"
#include "core/runtime/model_input.h"

namespace poslens {

RunResult run_model(const LoadedModel& model, const std::vector<int64_t>& ids,
                    const CaptureSpec& spec, const ProgressFn& progress) {
  spec.check_matches_any(model.model->hook_points());
  RunResult run;
  run.ids = ids;
  run.labels = token_labels(model, ids);
  run.pieces = token_pieces(model, ids);
  const auto tokens = torch::tensor(ids, torch::kLong).unsqueeze(0);
  c10::InferenceMode inference;  // no autograd bookkeeping for a plain run
  run.logits = model.model->forward(tokens, spec, &run.captures, progress);
  return run;
}

ExportMetadata export_metadata(const LoadedModel& model) {
  ExportMetadata meta;
  meta.tool_version = POSLENS_VERSION;
  meta.model_config_json = model.model->config().to_json();
  meta.checkpoint = model.path;
  meta.device = model.model->device().str();
  meta.dtype = dtype_name(model.model->dtype());
  meta.weights_sha256 = model.weights_sha256;
  meta.interventions = model.model->config().interventions;
  return meta;
}

void export_run(const std::string& path, const LoadedModel& model, const RunResult& run) {
  std::vector<NamedCapture> captures;
  for (const auto& [point, tensor] : run.captures.tensors)
    captures.push_back({point.name(), point.dims(), tensor});
  const ExportMetadata meta = export_metadata(model);
  const auto ids = torch::tensor(run.ids, torch::kLong).unsqueeze(0);
  write_captures_hdf5(path, captures, ids, run.labels, meta);
}

}  // namespace poslens
