#pragma once
// SentencePiece tokenizer.model (Llama-2, Mistral, Gemma, T5 ...) read and run without
// libsentencepiece: the same ids as SentencePiece 0.1.97's SentencePieceProcessor::Encode, and
// with BOS those of HF's (slow) LlamaTokenizer with its defaults.
//
// Pipeline, as google/sentencepiece src/sentencepiece_processor.cc (Encode,
// PopulateSentencePieceText, Decode):
//   normalise (sentencepiece_normalizer.h: charsmap, whitespace rules, "▁")
//   -> segment (BPE: sentencepiece_bpe.h, UNIGRAM: sentencepiece_unigram.h, WORD, CHAR)
//   -> pieces without an id become byte pieces <0xHH> (byte_fallback) or one <unk> per run.
//
// Differences from HF's LlamaTokenizer: special-token strings typed in the text ("<s>") are
// plain text here, as in SentencePiece (HF's slow tokenizer splits them out first); decode
// follows SentencePiece (HF's may differ around special tokens and spaces).
#include <memory>
#include <string>
#include <string_view>

#include "core/tokenizers/sentencepiece_model.h"
#include "core/tokenizers/tokenizer.h"

namespace poslens {

class SentencePieceTokenizer : public Tokenizer {
 public:
  /// Reads a tokenizer.model. Throws poslens::Error naming the file and the field for a file
  /// that is missing, too large, not a well-formed ModelProto or an inconsistent vocabulary
  /// (see parse_sentencepiece_model), or a broken precompiled charsmap.
  static std::unique_ptr<SentencePieceTokenizer> read(const std::string& path);
  /// The same from the file's bytes; `name` stands for the file in messages.
  static std::unique_ptr<SentencePieceTokenizer> from_bytes(std::string_view data,
                                                            const std::string& name);
  ~SentencePieceTokenizer() override;

  /// SentencePiece's ids of `text`, after the BOS id when `add_bos` and the model has a BOS
  /// piece (HF LlamaTokenizer's default). No EOS. Any byte string is accepted (malformed
  /// UTF-8 is encoded as U+FFFD, as SentencePiece does).
  std::vector<int64_t> encode(const std::string& text, bool add_bos) const override;
  /// encode() with the raw pieces and byte offsets [start, end) into `text`:
  /// - offsets are SentencePiece's (norm_to_orig): a piece covers the input bytes its
  ///   normalised bytes came from; the dummy-prefix "▁" maps to the start of the first word
  ///   ("Hello" -> "▁H" [0, 1)); spaces dropped by remove_extra_whitespaces belong to the
  ///   next piece; the dummy suffix (treat_whitespace_as_suffix) is empty at the end.
  /// - the byte pieces of one character each carry the whole character's range (HF's
  ///   convention; SentencePiece gives all but the last an empty range);
  /// - BOS (add_special) is {0, 0}.
  Encoding encode_full(const std::string& text, bool add_special) const override;
  /// Display text: "▁" -> " ", a byte piece "<0xHH>" -> that one byte ("<0x0A>" -> "\n"),
  /// everything else the raw piece.
  std::string token_text(int64_t id) const override;
  /// The raw piece ("▁the", "<0x0A>", "<s>").
  std::string piece(int64_t id) const override;
  /// SentencePiece's Decode: pieces joined, "▁" -> " ", the first piece's leading "▁" dropped
  /// (add_dummy_prefix), byte pieces assembled into UTF-8 (U+FFFD per malformed byte),
  /// CONTROL pieces give nothing, <unk> gives unk_surface (" ⁇ "), then the denormalizer if
  /// the model has one. Throws poslens::Error for an id outside the vocabulary.
  std::string decode(const std::vector<int64_t>& ids) const override;
  int64_t vocab_size() const override;
  /// The CONTROL piece named trainer_spec.bos_piece ("<s>"), or -1 if there is none
  /// (SentencePieceProcessor::bos_id).
  int64_t bos_id() const override;
  /// The CONTROL piece named trainer_spec.eos_piece ("</s>"), or -1.
  int64_t eos_id() const override;
  /// UNKNOWN, CONTROL and UNUSED pieces (never produced by encoding plain text).
  std::vector<int64_t> special_ids() const override;
  /// "SentencePiece BPE tokenizer.model, 32000 pieces (byte fallback, normalizer identity)".
  std::string describe() const override;

  const SentencePieceModel& model() const;

 private:
  SentencePieceTokenizer();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace poslens
