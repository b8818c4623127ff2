#pragma once
// The Unigram lattice's best path (google/sentencepiece src/unigram_model.cc
// Model::EncodeOptimized), shared by SentencePiece's own Unigram segmenter
// (sentencepiece_unigram.h: float scores) and HF's Unigram model (hf_unigram.h: tokenizers'
// models/unigram/model.rs encode_optimized, a port of the same function with f64 scores).
// Candidate pieces are visited shortest first, as both implementations' tries do, so ties
// resolve the same way.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace poslens::spm {

/// One piece of a segmentation: bytes [begin, begin + length) of the text and its id (the
/// unknown id for text without a piece).
struct Segment {
  uint32_t begin = 0;
  uint32_t length = 0;
  int32_t id = 0;
};

/// The pieces, sorted, walked byte by byte like a trie (a binary search per byte).
class PieceIndex {
 public:
  PieceIndex() = default;
  /// (piece, id) pairs, each piece once; the views must outlive the index. Empty pieces are
  /// never found.
  explicit PieceIndex(std::vector<std::pair<std::string_view, int32_t>> pieces);

  /// Calls visit(length, id) for every piece equal to text[start, start + length), shortest
  /// first: O(matched length * log pieces).
  template <class Visit>
  void for_each_prefix(std::string_view text, std::size_t start, Visit&& visit) const;

 private:
  std::vector<std::pair<std::string_view, int32_t>> sorted_;
};

/// Length of the UTF-8 character led by `lead` (1 for continuation and invalid bytes), clipped
/// to `left`.
inline std::size_t lattice_char_len(unsigned char lead, std::size_t left) {
  const auto n = static_cast<std::size_t>("\1\1\1\1\1\1\1\1\1\1\1\1\2\2\3\4"[lead >> 4]);
  return n < left ? n : left;
}

/// Appends the best segmentation of `text` (non-empty) to `out`.
///   piece_score(id, length, &score) -> bool: the score of a piece found in the text, or false
///     to skip it (SentencePiece's UNUSED pieces);
///   a character with no piece of exactly its length is `unk_id` at `unk_score`.
/// Scores follow both originals' arithmetic: a path score is a `Score`; a piece's score is added
/// as a double and the sum stored back as a `Score`; the unknown score is added as a `Score`.
/// `unk_id` < 0 (HF's Unigram without unk_id): throws poslens::Error when the best path would
/// use an unknown character, as tokenizers' MissingUnkId.
template <class Score, class PieceScore>
void best_path(std::string_view text, const PieceIndex& index, PieceScore&& piece_score,
               Score unk_score, int32_t unk_id, std::vector<Segment>& out);

/// Throws the error of best_path (out of line, so the template needs no error header).
[[noreturn]] void lattice_fail(const std::string& what);

template <class Visit>
void PieceIndex::for_each_prefix(std::string_view text, std::size_t start, Visit&& visit) const {
  // [lo, hi): the pieces that start with text[start, start + len); those equal to it come
  // first (string_view orders bytes as unsigned char).
  auto lo = sorted_.begin(), hi = sorted_.end();
  for (std::size_t len = 1; start + len <= text.size() && lo != hi; ++len) {
    const auto c = static_cast<int>(static_cast<unsigned char>(text[start + len - 1]));
    const std::size_t k = len - 1;
    auto key = [k](const std::pair<std::string_view, int32_t>& p) {
      return p.first.size() > k ? static_cast<int>(static_cast<unsigned char>(p.first[k])) : -1;
    };
    lo = std::partition_point(lo, hi, [&](const auto& p) { return key(p) < c; });
    hi = std::partition_point(lo, hi, [&](const auto& p) { return key(p) <= c; });
    if (lo == hi || lo->first.size() != len) continue;
    visit(len, lo->second);
  }
}

template <class Score, class PieceScore>
void best_path(std::string_view text, const PieceIndex& index, PieceScore&& piece_score,
               Score unk_score, int32_t unk_id, std::vector<Segment>& out) {
  if (text.empty()) return;
  if (text.size() > UINT32_MAX / 2)
    lattice_fail("Unigram: text of " + std::to_string(text.size()) +
                 " normalised bytes is too long to encode");
  struct Best {
    int32_t id = -1;
    Score score = 0;
    int64_t starts_at = -1;
  };
  const std::size_t size = text.size();
  std::vector<Best> best(size + 1);
  for (std::size_t start = 0; start < size;) {
    const Score score_here = best[start].score;
    bool has_single_node = false;
    const std::size_t mblen =
        lattice_char_len(static_cast<unsigned char>(text[start]), size - start);
    index.for_each_prefix(text, start, [&](std::size_t len, int32_t id) {
      double score = 0;
      if (!piece_score(id, len, &score)) return;
      Best& target = best[start + len];
      const double candidate = score + static_cast<double>(score_here);
      if (target.starts_at == -1 || candidate > static_cast<double>(target.score)) {
        target.score = static_cast<Score>(candidate);
        target.starts_at = static_cast<int64_t>(start);
        target.id = id;
      }
      if (!has_single_node && len == mblen) has_single_node = true;
    });
    if (!has_single_node) {
      Best& target = best[start + mblen];
      const Score candidate = unk_score + score_here;
      if (target.starts_at == -1 || candidate > target.score) {
        if (unk_id < 0)
          lattice_fail("Unigram: the text holds a character without a piece and the model has "
                       "no unknown id (model.unk_id is null)");
        target.score = candidate;
        target.starts_at = static_cast<int64_t>(start);
        target.id = unk_id;
      }
    }
    start += mblen;
  }

  const std::size_t first = out.size();
  for (std::size_t end = size; end > 0;) {
    const Best& node = best[end];
    if (node.starts_at < 0) lattice_fail("Unigram: no segmentation found");
    const auto begin = static_cast<std::size_t>(node.starts_at);
    out.push_back({static_cast<uint32_t>(begin), static_cast<uint32_t>(end - begin), node.id});
    end = begin;
  }
  std::reverse(out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
}

}  // namespace poslens::spm
