#pragma once
// SentencePiece's Unigram segmentation (google/sentencepiece src/unigram_model.cc,
// Model::EncodeOptimized): Viterbi over the normalised UTF-8 bytes, each piece scoring its
// log-probability, user-defined pieces length * max_score - 0.1 (so they always win), UNUSED
// pieces skipped, a character without a piece costing min_score - 10 as the unknown id.
#include <string_view>
#include <vector>

#include "core/tokenizers/sentencepiece_vocab.h"

namespace poslens::spm {

class UnigramSegmenter {
 public:
  /// `vocab` must outlive the segmenter.
  explicit UnigramSegmenter(const Vocabulary& vocab);
  /// Appends the best segmentation of `normalized` to `out`. Linear in the text times the
  /// longest piece (pieces are found by hashing each candidate substring).
  void encode(std::string_view normalized, std::vector<Segment>& out) const;

 private:
  const Vocabulary& vocab_;
  float min_score_;
  float max_score_;
};

}  // namespace poslens::spm
