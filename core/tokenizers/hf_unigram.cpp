#include "core/tokenizers/hf_unigram.h"

#include <algorithm>
#include <limits>

#include "core/base/error.h"
#include "core/base/text.h"

namespace poslens::hf {
namespace {
/// tokenizers' models/unigram/model.rs K_UNK_PENALTY.
constexpr double kUnkPenalty = 10.0;
}  // namespace

UnigramModel::UnigramModel(std::vector<std::pair<std::string, double>> vocab, int64_t unk_id,
                           bool byte_fallback, const std::string& where)
    : unk_id_(unk_id), byte_fallback_(byte_fallback) {
  if (vocab.empty()) throw Error(where + ": model.vocab is empty (Unigram needs at least <unk>)");
  if (unk_id >= static_cast<int64_t>(vocab.size()))
    throw Error(where + ": model.unk_id " + std::to_string(unk_id) + " is outside the " +
                std::to_string(vocab.size()) + "-entry vocabulary");
  pieces_.reserve(vocab.size());
  scores_.reserve(vocab.size());
  ids_.reserve(vocab.size());
  min_score_ = std::numeric_limits<double>::infinity();
  for (size_t id = 0; id < vocab.size(); ++id) {
    pieces_.push_back(std::move(vocab[id].first));
    scores_.push_back(vocab[id].second);
    ids_[pieces_.back()] = static_cast<uint32_t>(id);
    min_score_ = std::min(min_score_, vocab[id].second);
  }
  std::vector<std::pair<std::string_view, int32_t>> indexed;
  indexed.reserve(ids_.size());
  for (const auto& [piece, id] : ids_) indexed.emplace_back(piece, static_cast<int32_t>(id));
  index_ = spm::PieceIndex(std::move(indexed));
  for (int b = 0; b < 256; ++b) {
    static const char* hex = "0123456789ABCDEF";
    const auto it = ids_.find(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">");
    byte_ids_[static_cast<size_t>(b)] = it == ids_.end() ? int64_t{-1} : int64_t{it->second};
  }
}

void UnigramModel::tokenize(std::string_view word, std::vector<ModelToken>& out) const {
  if (word.empty()) return;
  thread_local std::vector<spm::Segment> segments;
  segments.clear();
  auto piece_score = [&](int32_t id, size_t, double* score) {
    *score = scores_[static_cast<size_t>(id)];
    return true;
  };
  spm::best_path<double>(word, index_, piece_score, min_score_ - kUnkPenalty,
                         static_cast<int32_t>(unk_id_), segments);
  // HF fuses consecutive unknowns (fuse_unk is always on for Unigram), then looks every string
  // up again: a fused run is usually in no piece.
  for (size_t i = 0; i < segments.size();) {
    const uint32_t start = segments[i].begin;
    uint32_t end = start + segments[i].length;
    size_t next = i + 1;
    if (unk_id_ >= 0 && segments[i].id == unk_id_)
      for (; next < segments.size() && segments[next].id == unk_id_; ++next)
        end = segments[next].begin + segments[next].length;
    const bool single = next == i + 1;
    i = next;
    if (single && segments[next - 1].id != unk_id_) {
      out.push_back({segments[next - 1].id, start, end});
      continue;
    }
    const auto it = ids_.find(std::string(word.substr(start, end - start)));
    if (it != ids_.end()) {
      out.push_back({it->second, start, end});
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (uint32_t k = start; k < end; ++k)
        all &= byte_ids_[static_cast<unsigned char>(word[k])] >= 0;
      if (all) {
        for (uint32_t k = start; k < end; ++k)
          out.push_back({byte_ids_[static_cast<unsigned char>(word[k])], start, end});
        continue;
      }
    }
    if (unk_id_ < 0)
      throw Error("Unigram: the text holds a character without a piece and the model has no "
                  "unknown id (model.unk_id is null)");
    ModelToken unk{unk_id_, start, end};
    unk.raw = true;  // HF's token is the unknown text, not the <unk> piece
    out.push_back(unk);
  }
}

int64_t UnigramModel::token_to_id(const std::string& token) const {
  const auto it = ids_.find(token);
  return it == ids_.end() ? int64_t{-1} : static_cast<int64_t>(it->second);
}

const std::string* UnigramModel::id_to_token(int64_t id) const {
  return id >= 0 && id < size() ? &pieces_[static_cast<size_t>(id)] : nullptr;
}

}  // namespace poslens::hf
