#pragma once
// llama2.c's tokenizer.bin (karpathy/llama2.c run.c `build_tokenizer` / `encode` / `decode`).
// Layout: int32 max_token_length, then per token: float32 score, int32 byte length, bytes.
#include <memory>
#include <string>

#include "core/tokenizers/tokenizer.h"

namespace poslens {

/// Encodes like run.c: BOS (id 1) if asked, a dummy-prefix space token when the text is
/// non-empty, each UTF-8 code point looked up (unknown ones fall back to byte tokens
/// <0xXX> = id byte+3), then repeatedly merges the adjacent pair whose concatenation is in the
/// vocabulary with the highest score. Decodes like run.c (strips the leading space after BOS,
/// turns <0xXX> back into bytes).
/// Differences from run.c, none visible on real vocabularies: BOS is kept out of the merges (so
/// it always stays first); a "<0xHH>" piece must be exactly 6 characters; a byte without a piece
/// or a byte-fallback id (vocab_size < 259) throws instead of producing an invalid id.
class Llama2cTokenizer : public Tokenizer {
 public:
  /// `vocab_size` comes from the model header. Throws poslens::Error if the file is truncated,
  /// a length is negative or larger than max_token_length, or the file holds extra bytes.
  Llama2cTokenizer(const std::string& path, int64_t vocab_size);
  ~Llama2cTokenizer() override;
  /// Ids in [0, vocab_size). Any byte string is accepted (invalid UTF-8 and NULs fall back to
  /// byte tokens). Without BOS the result starts with the dummy-prefix space.
  std::vector<int64_t> encode(const std::string& text, bool add_bos) const override;
  /// The stored piece ("\n<s>\n" for BOS, " the"); a "<0xXX>" piece as its one raw byte.
  /// Throws poslens::Error for an id outside [0, vocab_size).
  std::string token_text(int64_t id) const override;
  /// run.c's decode, concatenated: BOS/EOS give no text, a piece right after BOS loses its
  /// leading space, "<0xXX>" becomes the byte. decode(encode(s, true)) == s. Throws
  /// poslens::Error for an id outside the vocabulary.
  std::string decode(const std::vector<int64_t>& ids) const override;
  int64_t vocab_size() const override;
  int64_t bos_id() const override { return 1; }
  int64_t eos_id() const override { return 2; }
  /// <unk> 0, BOS 1, EOS 2 (llama2.c's SentencePiece convention).
  std::vector<int64_t> special_ids() const override { return {0, 1, 2}; }
  std::string describe() const override {
    return "llama2.c tokenizer.bin, " + std::to_string(vocab_size()) + " tokens";
  }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace poslens
