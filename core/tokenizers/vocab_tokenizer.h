#pragma once
// The tokenizers PosLens's own task models use: one token per character (Flip-Flop, selective
// copy, character language models) or one token per whitespace-separated word (counting).
// Stored as HF tokenizer.json so HF's `tokenizers` reads the same ids; this class reads only
// that subset (a merge-free BPE or a WordLevel model), full tokenizer.json support is separate.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/tokenizers/tokenizer.h"

namespace poslens {

class VocabTokenizer : public Tokenizer {
 public:
  enum class Unit {
    Character,  ///< HF: BPE with no merges, no pre-tokenizer, Fuse decoder
    Word,       ///< HF: WordLevel with the WhitespaceSplit pre-tokenizer, decoded joined by " "
  };

  /// `pieces[id]` is the token text. Pieces written `<...>` are special tokens (HF
  /// added_tokens with special=true): matched in the raw text before anything else and left
  /// out of decode. `bos` / `unk` name special pieces or are empty (no BOS; unknown input is an
  /// error). With a BOS the HF file carries a TemplateProcessing post-processor that adds it,
  /// as encode(text, true) does. A Character vocabulary holds one UTF-8 code point per
  /// non-special piece. Throws poslens::Error for an empty or repeated piece, a multi-character
  /// piece in a Character vocabulary, a piece with whitespace in a Word vocabulary, or a
  /// bos/unk that is not a special piece.
  VocabTokenizer(Unit unit, std::vector<std::string> pieces, const std::string& bos = "",
                 const std::string& unk = "");

  /// Reads a tokenizer.json of the subset above (file size limited, every field checked).
  /// Throws poslens::Error naming the file and the field for anything else, e.g. a BPE with
  /// merges ("needs full HF tokenizer support").
  static VocabTokenizer read(const std::string& path);
  /// The HF tokenizer.json text for this vocabulary (what read() accepts).
  std::string to_json() const;

  /// Ids of `text`: special pieces matched first, then per code point (Character) or per
  /// whitespace-separated word (Word). Unknown units become `unk`; without one they are left
  /// out, as HF's tokenizers does ("w0 r" gives w 0 r). Invalid UTF-8 bytes are unknown units.
  /// Never throws.
  std::vector<int64_t> encode(const std::string& text, bool add_bos) const override;
  std::string token_text(int64_t id) const override;
  /// Characters concatenated, words joined by one space; special tokens left out.
  std::string decode(const std::vector<int64_t>& ids) const override;
  int64_t vocab_size() const override { return static_cast<int64_t>(pieces_.size()); }
  int64_t bos_id() const override { return bos_; }
  int64_t eos_id() const override { return -1; }
  /// Every piece written `<...>` (BOS, unknown, padding).
  std::vector<int64_t> special_ids() const override { return special_ids_; }
  std::string describe() const override {
    return std::string("tokenizer.json, ") + (unit_ == Unit::Character ? "one token per character"
                                                                       : "one token per word") +
           ", " + std::to_string(vocab_size()) + " tokens";
  }

  Unit unit() const { return unit_; }
  /// Id of `piece`, or -1 when it is not in the vocabulary.
  int64_t id_of(const std::string& piece) const;
  const std::vector<std::string>& pieces() const { return pieces_; }

 private:
  Unit unit_;
  std::vector<std::string> pieces_;
  std::map<std::string, int64_t> ids_;
  std::vector<int64_t> special_ids_;  ///< longest piece first, for matching in raw text
  int64_t bos_ = -1;
  int64_t unk_ = -1;
};

/// Splits UTF-8 `text` into code points (each as its bytes); a byte that does not start a valid
/// sequence is returned alone. Used for character vocabularies and corpora.
std::vector<std::string> utf8_code_points(const std::string& text);

}  // namespace poslens
