#pragma once
// Text <-> token ids. One implementation per tokenizer format (llama2c_tokenizer.h for now).
#include <cstdint>
#include <string>
#include <vector>

namespace poslens {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  /// Token ids of `text`; with `add_bos` the model's BOS id first. Throws poslens::Error on
  /// text that cannot be encoded.
  virtual std::vector<int64_t> encode(const std::string& text, bool add_bos) const = 0;
  /// The piece of one token as it appears in the text (for labels: "▁the" shown as " the").
  /// Throws poslens::Error for an id outside the vocabulary.
  virtual std::string token_text(int64_t id) const = 0;
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
