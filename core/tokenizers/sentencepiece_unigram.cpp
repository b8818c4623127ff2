// SentencePiece Unigram segmentation; semantics from google/sentencepiece
// src/unigram_model.cc (Model::Model for min/max scores, Model::EncodeOptimized for the
// Viterbi pass). Candidate pieces are visited shortest first, as the trie traversal there
// does, so ties resolve the same way; scores are accumulated in the same float/double types.
#include "core/tokenizers/sentencepiece_unigram.h"

#include <algorithm>
#include <cfloat>

#include "core/base/error.h"

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
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const auto& e = pieces[i];
    if (e.type == SentencePieceEntry::Type::Normal) {
      min_score_ = std::min(min_score_, e.score);
      max_score_ = std::max(max_score_, e.score);
    }
    if (vocab.normal_id(e.piece) == static_cast<int32_t>(i))
      sorted_.emplace_back(e.piece, static_cast<int32_t>(i));
  }
  std::sort(sorted_.begin(), sorted_.end());
}

void UnigramSegmenter::encode(std::string_view normalized, std::vector<Segment>& out) const {
  if (normalized.empty()) return;
  if (normalized.size() > UINT32_MAX / 2)
    throw Error("SentencePiece Unigram: text of " + std::to_string(normalized.size()) +
                " normalised bytes is too long to encode");
  struct Best {
    int32_t id = -1;
    float score = 0;
    int64_t starts_at = -1;
  };
  const std::size_t size = normalized.size();
  const float unk_score = min_score_ - kUnkPenalty;
  std::vector<Best> best(size + 1);

  for (std::size_t start = 0; start < size;) {
    const float score_here = best[start].score;
    bool has_single_node = false;
    const std::size_t mblen = std::min(
        utf8_char_len(static_cast<unsigned char>(normalized[start])), size - start);
    // [lo, hi): the pieces that start with normalized[start, start + len); those equal to it
    // come first (string_view orders bytes as unsigned char).
    auto lo = sorted_.begin(), hi = sorted_.end();
    for (std::size_t len = 1; start + len <= size && lo != hi; ++len) {
      const auto c = static_cast<unsigned char>(normalized[start + len - 1]);
      const std::size_t k = len - 1;
      auto key = [k](const std::pair<std::string_view, int32_t>& p) {
        return p.first.size() > k ? static_cast<int>(static_cast<unsigned char>(p.first[k])) : -1;
      };
      lo = std::partition_point(lo, hi, [&](const auto& p) { return key(p) < c; });
      hi = std::partition_point(lo, hi, [&](const auto& p) { return key(p) <= c; });
      if (lo == hi || lo->first.size() != len) continue;
      const int32_t id = lo->second;
      const auto& e = vocab_.entry(id);
      if (e.type == SentencePieceEntry::Type::Unused) continue;
      Best& target = best[start + len];
      // Same arithmetic as unigram_model.cc: `cond ? length * max_score_ - 0.1 : score` is a
      // double, and so is its sum with the float path score.
      const double score = e.type == SentencePieceEntry::Type::UserDefined
                               ? static_cast<double>(static_cast<float>(len) * max_score_) - 0.1
                               : static_cast<double>(e.score);
      const double candidate = score + static_cast<double>(score_here);
      if (target.starts_at == -1 || candidate > target.score) {
        target.score = static_cast<float>(candidate);
        target.starts_at = static_cast<int64_t>(start);
        target.id = id;
      }
      if (!has_single_node && len == mblen) has_single_node = true;
    }
    if (!has_single_node) {
      Best& target = best[start + mblen];
      const float candidate = unk_score + score_here;
      if (target.starts_at == -1 || candidate > target.score) {
        target.score = candidate;
        target.starts_at = static_cast<int64_t>(start);
        target.id = vocab_.unk_id();
      }
    }
    start += mblen;
  }

  const std::size_t first = out.size();
  for (std::size_t end = size; end > 0;) {
    const Best& node = best[end];
    if (node.starts_at < 0) throw Error("SentencePiece Unigram: no segmentation found");
    const auto begin = static_cast<std::size_t>(node.starts_at);
    out.push_back({static_cast<uint32_t>(begin), static_cast<uint32_t>(end - begin), node.id});
    end = begin;
  }
  std::reverse(out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
}

}  // namespace poslens::spm
