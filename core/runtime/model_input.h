#pragma once
// A model's input and its labels: token ids typed or encoded from text, the decoder's ids, and one
// readable label per token — shared by poslens-cli, the GUI worker and the analyses.
#include <cstdint>
#include <string>
#include <vector>

#include "core/runtime/checkpoint.h"

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

}  // namespace poslens
