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

/// Parses "1,2, 3" into ids; ids may also be separated by spaces, tabs or line breaks (a file of
/// one id per line). Throws poslens::Error for an empty list or an empty item between commas, a
/// non-integer entry (naming it) or an id outside [0, vocab_size).
std::vector<int64_t> parse_token_ids(const std::string& text, int64_t vocab_size);

/// Encodes `text` with the model's tokenizer, BOS first when the model has one (Llama-style);
/// masked LMs and encoder–decoder models get their tokenizer's special tokens ([CLS] … [SEP],
/// <s> … </s>, T5's closing </s>).
/// Throws poslens::Error for empty text or when the model has no supported tokenizer (the
/// message says to pass token ids instead).
std::vector<int64_t> encode_text(const LoadedModel& model, const std::string& text);

/// An encoder–decoder model's decoder input: decoder_start_token_id, then `text` encoded
/// without special tokens (empty text: the start token alone), as HF shifts labels right.
/// Throws poslens::Error for a model that is not encoder–decoder or has no tokenizer (text given).
std::vector<int64_t> decoder_ids(const LoadedModel& model, const std::string& text);

/// Throws poslens::Error saying that `what` reads one stack of layers when `model` is an
/// encoder–decoder model (T5): the analyses of analysis/ are not stack-aware yet (run and the
/// GUI's head grid are).
void require_one_stack(const LoadedModel& model, const std::string& what);

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

/// One position's most likely tokens, best first: (id, probability).
struct PositionPredictions {
  int64_t position = 0;  ///< the query position whose logits these are
  std::vector<std::pair<int64_t, float>> top;
};

/// Which logits the user reads after a run (ForwardOptions::logits): the last position's of a
/// causal LM (the next token); every position's of a masked LM (what each masked position
/// predicts — BERT-style models are short, n_ctx 512).
LogitsReturned prediction_logits(const ModelConfig& config);

/// The predictions a run reports, from the logits prediction_logits() asked for ([1, pos or 1,
/// vocab], any device): a causal LM's next token after the last position; a masked LM's
/// prediction at each position holding the mask token ("[MASK]" or "<mask>"), or at every
/// position when there is none (at most `max_positions` of them). Throws poslens::Error when
/// `logits` does not fit `labels`.
std::vector<PositionPredictions> predictions(const ModelConfig& config, const at::Tensor& logits,
                                             const std::vector<std::string>& labels, int top_k,
                                             int max_positions = 16);

/// One line for a status bar or the CLI: "next token: "x" (p=0.41)" or "masked 3 → "paris"
/// (p=0.52), …", the token texts through display_label.
std::string describe_predictions(const LoadedModel& model, const std::vector<PositionPredictions>& p);

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
