#pragma once
// What the tokenizer targets do with a tokenizer that loaded: encode a fixed set of texts
// (ASCII, accents, CJK, emoji, combining marks, control characters, special-token spellings,
// invalid UTF-8), with and without special tokens, decode the ids again, and look up pieces.
// A hostile vocabulary, merge list, regex or charsmap that loads must not break these.
// poslens::Error from encode() is allowed where documented (text that is not valid UTF-8 for
// HF, an id outside the vocabulary); anything else propagates and is a finding.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/tokenizers/tokenizer.h"
#include "fuzz_common.h"

namespace poslens::fuzz {

inline const std::vector<std::string>& sample_texts() {
  static const std::vector<std::string> texts = {
      "",
      "Hello world! Once upon a time, there was a little girl named Lily.",
      "  leading and  double  spaces\tand tabs\r\nand newlines\n\n",
      "\xC3\x89" "COLE caf\xC3\xA9 na\xC3\xAF" "ve e\xCC\x81 \xE2\x91\xA0 \xC2\xBD \xEF\xAC\x81",  // ÉCOLE café naïve é ① ½ ﬁ
      "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4 \xD8\xA7\xD9\x84\xD8\xB9\xD8\xB1\xD8\xA8\xD9\x8A\xD8\xA9",
      "\xF0\x9F\x98\x80\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD \xE2\x80\x8D \xEF\xBB\xBF",
      "<s></s><unk><pad>[CLS][SEP][UNK][MASK]<|endoftext|>\xE2\x96\x81x <0x0A>",
      "12345 3.14159 -42 0x1F",
      std::string("nul\0byte \x1e\x7f", 11),
      "\xFF\xFE invalid \xC0\x80 utf-8 \xED\xA0\x80 \xF4\x90\x80\x80",
      std::string(300, 'a') + std::string(100, ' ') + "b",
  };
  return texts;
}

/// Exercises `t` on the sample texts plus `extra` (e.g. text made from the input itself).
inline void exercise_tokenizer(const Tokenizer& t, const std::string& extra = "") {
  const int64_t vocab = t.vocab_size();
  if (vocab < 0) finding("negative vocab_size");
  std::vector<std::string> texts = sample_texts();
  if (!extra.empty()) texts.push_back(extra);
  for (const std::string& text : texts) {
    for (const bool special : {false, true}) {
      refuse([&] {
        const std::vector<int64_t> ids = t.encode(text, special);
        for (const int64_t id : ids)
          if (id < 0 || id >= vocab)
            finding("encode() gave id " + std::to_string(id) + " outside the vocabulary of " + std::to_string(vocab));
        keep(t.decode(ids));
      });
      refuse([&] {
        const Encoding e = t.encode_full(text, special);
        if (e.tokens.size() != e.ids.size() || (!e.offsets.empty() && e.offsets.size() != e.ids.size()))
          finding("encode_full(): ids, tokens and offsets differ in length");
        for (const auto& [begin, end] : e.offsets)
          if (begin > end || end > text.size()) finding("encode_full(): offset outside the text");
      });
    }
  }
  const int64_t shown = std::min<int64_t>(vocab, 300);
  for (int64_t id = 0; id < shown; ++id) {
    refuse([&] { keep(t.token_text(id)); });
    refuse([&] { keep(t.piece(id)); });
  }
  for (const int64_t id : {int64_t{-1}, vocab, vocab + 1, int64_t{1} << 40}) {
    refuse([&] { keep(t.token_text(id)); });
    refuse([&] { keep(t.decode({id})); });
  }
  keep(t.bos_id());
  keep(t.eos_id());
  keep(t.special_ids());
  keep(t.describe());
}

}  // namespace poslens::fuzz
