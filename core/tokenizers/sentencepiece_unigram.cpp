// SentencePiece Unigram segmentation; semantics from google/sentencepiece
// src/unigram_model.cc (Model::Model for min/max scores, Model::EncodeOptimized for the
// Viterbi pass, sentencepiece_lattice.h), with its float path scores.
#include "core/tokenizers/sentencepiece_unigram.h"

#include <algorithm>
#include <cfloat>

namespace poslens::spm {
namespace {
/// unigram_model.cc kUnkPenalty.
constexpr float kUnkPenalty = 10.0f;
}  // namespace

UnigramSegmenter::UnigramSegmenter(const Vocabulary& vocab) : vocab_(vocab) {
  // As in unigram_model.cc: over NORMAL pieces, starting from FLT_MAX and FLT_MIN (the
  // smallest positive float, so max_score_ is never negative).
  min_score_ = FLT_MAX;
  max_score_ = FLT_MIN;
  const auto& pieces = vocab.model().pieces;
  std::vector<std::pair<std::string_view, int32_t>> normal;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const auto& e = pieces[i];
    if (e.type == SentencePieceEntry::Type::Normal) {
      min_score_ = std::min(min_score_, e.score);
      max_score_ = std::max(max_score_, e.score);
    }
    if (vocab.normal_id(e.piece) == static_cast<int32_t>(i))
      normal.emplace_back(e.piece, static_cast<int32_t>(i));
  }
  index_ = PieceIndex(std::move(normal));
}

void UnigramSegmenter::encode(std::string_view normalized, std::vector<Segment>& out) const {
  // Same arithmetic as unigram_model.cc: `cond ? length * max_score_ - 0.1 : score` is a
  // double, and so is its sum with the float path score; the unknown score is a float.
  auto piece_score = [&](int32_t id, std::size_t len, double* score) {
    const auto& e = vocab_.entry(id);
    if (e.type == SentencePieceEntry::Type::Unused) return false;
    *score = e.type == SentencePieceEntry::Type::UserDefined
                 ? static_cast<double>(static_cast<float>(len) * max_score_) - 0.1
                 : static_cast<double>(e.score);
    return true;
  };
  best_path<float>(normalized, index_, piece_score, min_score_ - kUnkPenalty, vocab_.unk_id(),
                   out);
}

}  // namespace poslens::spm
