#pragma once
// What a job sees on the worker thread (jobs/jobs.h): the open model, what the last run's
// attention was computed from, progress and cancellation, and values kept per model. LibTorch
// types: only inference_worker.cpp and jobs/*.cpp include this.
#include <torch/torch.h>

#include <any>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analysis/heatmap_data.h"
#include "analysis/progress.h"
#include "app/gui/run_types.h"
#include "core/runtime/attention.h"
#include "core/runtime/checkpoint.h"
#include "core/runtime/model_input.h"

namespace poslens::gui {

/// One input and what its attention is computed from, per layer (q and k after the position
/// encoding, and v or the block input where the encoding's scores read them): O(L · T · d),
/// from which any head's map, or a region of it, is recomputed when looked at.
struct AttentionState {
  RunInput input;
  std::vector<int64_t> ids;
  std::vector<std::string> labels;  ///< token_labels
  std::vector<std::string> pieces;  ///< token_pieces
  /// What maps are recomputed from, per layer; empty for an encoder–decoder model, whose
  /// head maps come from a forward pass of their own (inference_worker.cpp).
  std::vector<LayerAttentionInputs> layers;
  std::vector<int64_t> decoder_ids;          ///< encoder–decoder models: the decoder's input
  std::vector<std::string> decoder_labels;   ///< its token_labels
};

/// One row of the head grid: a stack's layer.
struct AttentionRow {
  HookStack stack = HookStack::Blocks;
  int layer = 0;
  /// "L3"; with per-layer schemes its type too ("L3 NoPE", "L4 local 512", "L5 global"); T5:
  /// "enc 3", "dec 3", "cross 3"
  std::string label;
};

/// The head grid's rows: the model's layers, or an encoder–decoder model's encoder layers,
/// then its decoder's self-attention layers, then their cross-attention (the order
/// PooledMapSink's maps come in).
inline std::vector<AttentionRow> attention_rows(const ModelConfig& c) {
  std::vector<AttentionRow> rows;
  if (!c.encoder_decoder()) {
    for (int l = 0; l < c.n_layers; ++l)
      rows.push_back({HookStack::Blocks, l,
                      "L" + std::to_string(l) + (c.per_layer_schemes() ? " " + c.layer_type(l) : std::string())});
    return rows;
  }
  for (int l = 0; l < c.n_encoder_layers; ++l) rows.push_back({HookStack::Encoder, l, "enc " + std::to_string(l)});
  for (int l = 0; l < c.n_layers; ++l) rows.push_back({HookStack::Decoder, l, "dec " + std::to_string(l)});
  for (int l = 0; l < c.n_layers; ++l) rows.push_back({HookStack::Cross, l, "cross " + std::to_string(l)});
  return rows;
}

/// Labels rows [q0, q1) of `map` with `q_labels` and keys [k0, k1) with `k_labels` (token texts,
/// shown through display_label), sets the offsets and the title "`row`, head H — `what`".
inline void label_map(HeatmapData& map, const std::vector<std::string>& q_labels,
                      const std::vector<std::string>& k_labels, const std::string& row, int head, int64_t q0,
                      int64_t q1, int64_t k0, int64_t k1, const std::string& what) {
  map.row_offset = q0;
  map.col_offset = k0;
  for (int64_t i = q0; i < q1; ++i) map.row_labels.push_back(display_label(q_labels[static_cast<size_t>(i)]));
  for (int64_t j = k0; j < k1; ++j) map.col_labels.push_back(display_label(k_labels[static_cast<size_t>(j)]));
  map.head = head;
  map.title = row + ", head " + std::to_string(head) + " — " + what;
}

/// Labels `map`, a view of head (`layer`, `head`) of `s` over rows [q0, q1) × keys [k0, k1):
/// token labels on both axes, the input's ids and pieces, the offsets and the title
/// "layer L, head H — `what`".
inline void label_head_map(HeatmapData& map, const AttentionState& s, int layer, int head, int64_t q0,
                           int64_t q1, int64_t k0, int64_t k1, const std::string& what) {
  label_map(map, s.labels, s.labels, "layer " + std::to_string(layer), head, q0, q1, k0, k1, what);
  map.token_ids = s.ids;
  map.token_pieces = s.pieces;
  map.layer = layer;
}

class WorkerContext {
 public:
  /// The open model. Throws poslens::Error when none is open.
  virtual const LoadedModel& model() const = 0;
  /// The attention state of `input`: the last run's when it was of `input`, else made by one
  /// forward pass reporting to `progress` (kept until the next input, so the next head of the
  /// same input is cheap). Throws poslens::Error for bad input, poslens::Cancelled.
  virtual const AttentionState& attention(const RunInput& input, const Progress& progress) = 0;
  /// Reports to the session's progress bar; cancelling makes it throw poslens::Cancelled.
  virtual const Progress& progress() const = 0;
  virtual bool cancelled() const = 0;
  /// A value kept while this model is open (a probe per length, say): made by `make` the first
  /// time `key` is asked for.
  virtual std::any& cached(const std::string& key, const std::function<std::any()>& make) = 0;

 protected:
  ~WorkerContext() = default;
};

/// The ids of `input` for `model`: comma-separated ids or the text encoded.
std::vector<int64_t> input_ids(const LoadedModel& model, const RunInput& input);

}  // namespace poslens::gui
