#pragma once
// SentencePiece's Unigram segmentation (google/sentencepiece src/unigram_model.cc,
// Model::EncodeOptimized): Viterbi over the normalised UTF-8 bytes (sentencepiece_lattice.h),
// each piece scoring its log-probability, user-defined pieces length * max_score - 0.1 (so they
// always win), UNUSED pieces skipped, a character without a piece costing min_score - 10 as
// the unknown id.
#include <vector>

#include "core/tokenizers/sentencepiece_lattice.h"
#include "core/tokenizers/sentencepiece_vocab.h"

namespace poslens::spm {

class UnigramSegmenter {
 public:
  /// `vocab` must outlive the segmenter.
  explicit UnigramSegmenter(const Vocabulary& vocab);
  /// Appends the best segmentation of `normalized` to `out`. Pieces starting at a position
  /// are found by walking a sorted piece list byte by byte (a binary search per byte, like a
  /// trie), so the cost is O(text * matched length * log vocabulary) whatever the pieces.
  void encode(std::string_view normalized, std::vector<Segment>& out) const;

 private:
  const Vocabulary& vocab_;
  PieceIndex index_;  // normal pieces
  float min_score_;
  float max_score_;
};

}  // namespace poslens::spm
