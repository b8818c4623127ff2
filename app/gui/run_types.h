#pragma once
// Small value results that cross from the worker thread to the GUI (queued signals). Plain Qt
// and std types only: no LibTorch, so every GUI translation unit may include this.
#include <QMetaType>
#include <QString>
#include <QStringList>

#include <memory>
#include <atomic>
#include <vector>

#include "analysis/heatmap_data.h"

namespace poslens::gui {

struct ModelSummary {
  QString path;
  QString description;  ///< multi-line text of core describe()
  int n_layers = 0;   ///< rows of the head grid: layers, or an encoder–decoder model's stacks' layers
  int n_heads = 0;
  /// Row labels ("L0", …; T5: "enc 0", …, "dec 0", …, "cross 0", …); empty: "L<n>".
  QStringList layer_labels;
  bool encoder_decoder = false;  ///< T5: the input has a decoder text too
  bool has_tokenizer = false;
  QString tokenizer_note;  ///< without a tokenizer: why (none found, or the file's problem)
  /// The per-head maps this model can show, as hook suffixes ("hook_pattern",
  /// "hook_attn_scores", and where the position encoding has them "hook_pos_scores",
  /// "hook_cope_gates", "hook_cope_pos"); the pattern comes first.
  QStringList views;
  bool rotary = false;     ///< q and k rotate (RoPE, scaled RoPE, HoPE): frequency analysis applies
  bool rope = false;           ///< some layer has a RoPE component (p-RoPE applies)
  bool learned_sinks = false;  ///< gpt-oss's learned sink logits (sink removal applies)
  /// What the model runs with instead of the checkpoint as stored (Session::setInterventions;
  /// ModelConfig::interventions), empty for the checkpoint itself.
  QString interventions;
  int train_length = 0;    ///< L from the checkpoint (0: unknown)
  QString series_folder;   ///< the run folder when the checkpoint is one of its step-* folders
};

struct RunSummary {
  int n_layers = 0;
  int n_heads = 0;
  QStringList layer_labels;  ///< as ModelSummary::layer_labels
  QString view;                              ///< hook suffix the thumbnails show
  QStringList tokens;                        ///< one label per position
  std::vector<poslens::HeatmapData> thumbnails;  ///< index layer * n_heads + head, pooled small
  QString message;                           ///< timing and next-token prediction
};

/// What one run reads: the text (or comma-separated ids) and how to read it.
struct RunInput {
  QString text;
  bool as_token_ids = false;
  /// Encoder–decoder models: the decoder's input after its start token (`text` is the
  /// encoder's); ignored by other models.
  QString decoder_text;
  bool operator==(const RunInput& o) const {
    return text == o.text && as_token_ids == o.as_token_ids && decoder_text == o.decoder_text;
  }
};

/// Identity of one job on the worker. `cancel` is shared with the Session, which sets it when
/// the job goes stale (a newer job of its tag) or the user cancels; the worker checks it between
/// layers and before emitting, and the Session drops anything a cancelled job still sends.
struct JobTicket {
  quint64 generation = 0;
  std::shared_ptr<std::atomic<bool>> cancel = std::make_shared<std::atomic<bool>>(false);
  bool cancelled() const { return cancel->load(); }
};

}  // namespace poslens::gui

Q_DECLARE_METATYPE(poslens::gui::ModelSummary)
Q_DECLARE_METATYPE(poslens::gui::RunSummary)
Q_DECLARE_METATYPE(poslens::HeatmapData)
