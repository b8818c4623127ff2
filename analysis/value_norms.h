#pragma once
// value-norms: the norm of every token's value vector in every layer and kv head, ‖v_{t,h}‖₂ of
// hook_v (docs/formulas.md §1; v is never rotated), streamed from one forward pass. Read beside
// the sink metric of `heads`: Guo et al. 2024 ("Active-Dormant Attention Heads: Mechanistically
// Demystifying Extreme-Token Phenomena in LLMs", arXiv 2410.13835, §2–3) find that the token a
// head sinks on carries a small value state — a "value-state drain" — so the mass it takes adds
// little to the output. The summary per head is ‖v_0‖ / median_{t≥1} ‖v_t‖: well below 1 where
// the first token is such a drain. A plain analysis (analysis_result.h): this module, its
// registry line and its tests are all of it.
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "analysis/analysis_files.h"
#include "analysis/analysis_result.h"
#include "analysis/progress.h"
#include "core/formats/hdf5_reader.h"
#include "core/runtime/checkpoint.h"
#include "core/runtime/hook_sink.h"

namespace poslens {

struct ValueNorms {
  /// float32 [layer, kv_head, pos]: ‖v_{t,h}‖₂ (float32 norms of the model's v); kv_head runs to
  /// the most KV heads of any layer, NaN beyond a layer's own (Gemma 4's global layers have fewer).
  at::Tensor norms;
  /// float64 [layer, kv_head]: ‖v_0‖ / median over t ≥ 1 of ‖v_t‖ (the lower middle value for
  /// an even count, as torch.median); NaN for a one-token input.
  at::Tensor first_token_ratio() const;
};

/// Collects ‖v‖ of every layer's hook_v (decoder- or encoder-only stacks), position chunks as
/// they come. Memory: float32 [layer, kv_head, T], nothing per T².
class ValueNormSink : public HookSink {
 public:
  ValueNormSink(int64_t n_layers, int64_t n_kv_heads, int64_t T);
  bool wants(const HookPoint& point) const override;
  void tensor(const HookPoint& point, const at::Tensor& value, int64_t pos_begin) override;
  ValueNorms result() const { return {norms_.clone()}; }

 private:
  at::Tensor norms_;
};

/// One forward pass of `model` over `ids` (a batch of one) with ValueNormSink; `progress`
/// counts layers. Throws poslens::Error for empty or bad ids or an encoder–decoder model;
/// poslens::Cancelled.
ValueNorms compute_value_norms(const LoadedModel& model, const std::vector<int64_t>& ids,
                               const Progress& progress = {});

/// `/analysis/value_norms/{norms [layer, kv_head, pos] float32, first_token_ratio [layer,
/// kv_head] float64}`, attribute `measure`; `/tokens`; `meta` at the root. Atomic.
void write_value_norms_hdf5(const std::string& path, const ValueNorms& v, const AnalysisInput& input,
                            const ExportMetadata& meta);
/// What write_value_norms_hdf5 wrote. Throws poslens::Error naming the file for another
/// PosLens version's file or a norms dataset that is not 3-D.
ValueNorms read_value_norms_hdf5(const Hdf5Reader& file);
/// `layer,kv_head,position,token,norm`, one row per layer, head and position.
std::string value_norms_csv(const ValueNorms& v, const std::vector<std::string>& labels);

/// The views: ‖v_0‖ / median ‖v‖ as a layer × kv-head map, and the head-mean ‖v‖ as a layer ×
/// position map (`labels` one per token, may be empty); the CSV and the writer; the summary
/// names the head with the strongest drain. `name` is the checkpoint's short name.
AnalysisResult value_norms_result(const ValueNorms& v, const AnalysisInput& input, const std::string& name);
/// The registry's `run` and `read` (analysis_registry.h).
AnalysisResult run_value_norms(const LoadedModel& model, const AnalysisInput& input, const Progress& progress);
AnalysisResult read_value_norms(const Hdf5Reader& file);

}  // namespace poslens
