#pragma once
// Text <-> token ids. One implementation per tokenizer format (llama2c_tokenizer.h for now).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace poslens {

/// One encoded text as `poslens-cli tokenize --json` and the GUI's hover read-out show it.
struct Encoding {
  std::vector<int64_t> ids;
  /// The raw vocabulary piece of each id ("Ġworld", "▁the", "<0x0A>"), as HF's getTokens().
  std::vector<std::string> tokens;
  /// Byte range [start, end) of each id in the UTF-8 input, as HF's offsets with byte offsets;
  /// {0, 0} for tokens the post-processor adds. Empty when the tokenizer cannot tell.
  std::vector<std::pair<size_t, size_t>> offsets;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  /// Token ids of `text`; with `add_bos` the model's BOS id first. Throws poslens::Error on
  /// text that cannot be encoded.
  virtual std::vector<int64_t> encode(const std::string& text, bool add_bos) const = 0;
  /// The piece of one token as it appears in the text (for labels: "▁the" shown as " the").
  /// Throws poslens::Error for an id outside the vocabulary.
  virtual std::string token_text(int64_t id) const = 0;
  /// The raw vocabulary piece of `id` ("Ġworld", "▁the", "<0x0A>"); token_text() by default.
  /// Throws poslens::Error for an id outside the vocabulary.
  virtual std::string piece(int64_t id) const { return token_text(id); }
  /// encode() with the raw pieces and byte offsets. `add_special`: what encode's `add_bos`
  /// means for this format (HF: the post-processor's template). The default has no offsets.
  virtual Encoding encode_full(const std::string& text, bool add_special) const {
    Encoding out;
    out.ids = encode(text, add_special);
    for (int64_t id : out.ids) out.tokens.push_back(piece(id));
    return out;
  }
  /// Concatenated text of `ids` (the inverse of encode, BOS/EOS dropped).
  virtual std::string decode(const std::vector<int64_t>& ids) const = 0;
  virtual int64_t vocab_size() const = 0;
  virtual int64_t bos_id() const = 0;
  virtual int64_t eos_id() const = 0;
  /// Ids of the special tokens (BOS, EOS, unknown, padding, ...), which analyses that draw
  /// "every token of the vocabulary" leave out (the U-shape probe). Any order.
  virtual std::vector<int64_t> special_ids() const = 0;
  /// What kind of tokenizer this is, for `info` and the GUI ("llama2.c tokenizer.bin, 512 tokens").
  virtual std::string describe() const = 0;
};

}  // namespace poslens
