#pragma once
// One forward pass from user input to captures, shared by poslens-cli and the GUI worker.
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "core/formats/hdf5_export.h"
#include "core/runtime/checkpoint.h"
#include "core/runtime/hook_points.h"
#include "core/runtime/transformer.h"

namespace poslens {

/// Parses "1,2, 3" into ids. Throws poslens::Error for an empty list, a non-integer entry
/// (naming it) or an id outside [0, vocab_size).
std::vector<int64_t> parse_token_ids(const std::string& text, int64_t vocab_size);

/// Encodes `text` with the model's tokenizer, BOS first when the model has one (Llama-style).
/// Throws poslens::Error for empty text or when the model has no supported tokenizer (the
/// message says to pass token ids instead).
std::vector<int64_t> encode_text(const LoadedModel& model, const std::string& text);

/// One label per id: the token's text from the tokenizer, or "#<id>" without one.
std::vector<std::string> token_labels(const LoadedModel& model, const std::vector<int64_t>& ids);
/// The raw vocabulary piece of each id (Tokenizer::piece: "Ġthe", "▁the", "<0x0A>"), "#id"
/// without a tokenizer.
std::vector<std::string> token_pieces(const LoadedModel& model, const std::vector<int64_t>& ids);

/// A token's text (Tokenizer::token_text) made readable on one line: spaces as "␣" (so byte-level
/// "Ġthe" and SentencePiece "▁the" read "␣the"), newline "↵", tab "⇥", carriage return "␍", other
/// control characters and bytes that are not valid UTF-8 (part of a character split across
/// tokens) as "\xNN"; llama2.c's "\n<s>\n" as "<s>".
std::string display_label(const std::string& token_text);

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
