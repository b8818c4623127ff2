#pragma once
// The lookup tables SentencePiece's ModelInterface builds from the pieces
// (google/sentencepiece src/model_interface.cc InitializePieces, PieceToId), shared by the
// BPE and Unigram segmenters.
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/tokenizers/sentencepiece_lattice.h"  // Segment
#include "core/tokenizers/sentencepiece_model.h"
#include "core/tokenizers/sentencepiece_normalizer.h"

namespace poslens::spm {

class Vocabulary {
 public:
  /// `model` must be validated (parse_sentencepiece_model) and outlive the vocabulary.
  explicit Vocabulary(const SentencePieceModel& model);

  const SentencePieceModel& model() const { return *model_; }
  /// SentencePiece's PieceToId: reserved pieces (UNKNOWN, CONTROL, BYTE) first, then the
  /// normal ones (NORMAL, USER_DEFINED, UNUSED), else unk_id().
  int32_t piece_to_id(std::string_view piece) const;
  /// Id of a normal piece (NORMAL, USER_DEFINED, UNUSED) or -1.
  int32_t normal_id(std::string_view piece) const {
    const auto it = normal_.find(piece);
    return it == normal_.end() ? -1 : it->second;
  }
  int32_t unk_id() const { return unk_id_; }
  /// Id of the piece for byte `b` (byte-fallback models only).
  int32_t byte_id(unsigned char b) const { return byte_ids_[b]; }
  const SentencePieceEntry& entry(int32_t id) const {
    return model_->pieces[static_cast<std::size_t>(id)];
  }
  bool is(int32_t id, SentencePieceEntry::Type type) const { return entry(id).type == type; }
  /// User-defined pieces, matched first in the text (normaliser and segmenters).
  const PrefixMatcher& user_defined() const { return user_defined_; }

 private:
  const SentencePieceModel* model_;
  std::unordered_map<std::string_view, int32_t> normal_, reserved_;
  std::vector<int32_t> byte_ids_;
  int32_t unk_id_ = 0;
  PrefixMatcher user_defined_;
};

}  // namespace poslens::spm
