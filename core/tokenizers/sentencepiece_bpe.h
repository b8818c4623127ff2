#pragma once
// SentencePiece's BPE segmentation (google/sentencepiece src/bpe_model.cc, Model::SampleEncode
// with alpha 0): no merge list — starting from characters (user-defined pieces kept whole and
// never merged), repeatedly merge the adjacent pair whose concatenation is a vocabulary piece
// with the highest score, leftmost on ties; merged UNUSED pieces are split back into the
// pieces they were made of. Pieces left without an id get the unknown id.
#include <string_view>
#include <vector>

#include "core/tokenizers/sentencepiece_vocab.h"

namespace poslens::spm {

class BpeSegmenter {
 public:
  /// `vocab` must outlive the segmenter.
  explicit BpeSegmenter(const Vocabulary& vocab);

  /// Appends the segmentation of `normalized` to `out` (offsets relative to `normalized`).
  ///
  /// Speed: a priority queue over adjacent pairs (O(n log n)), as SentencePiece. When no
  /// vocabulary piece holds "▁" right after another character (true of Llama, Mistral, Gemma
  /// and every model trained without treat_whitespace_as_suffix), no merge can cross the
  /// start of a "▁" run, so the text is cut there into words, each segmented once per call
  /// (a cache keyed by the word's bytes) with the same result as segmenting the whole text.
  void encode(std::string_view normalized, std::vector<Segment>& out) const;

  /// Whether the word cache is in use for this vocabulary (see encode).
  bool splits_words() const { return split_words_; }

 private:
  void encode_word(std::string_view text, uint32_t base, std::vector<Segment>& out) const;

  const Vocabulary& vocab_;
  bool split_words_ = false;
};

}  // namespace poslens::spm
