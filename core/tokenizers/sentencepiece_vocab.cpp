// SentencePiece vocabulary lookups; see sentencepiece_vocab.h.
#include "core/tokenizers/sentencepiece_vocab.h"

namespace poslens::spm {
namespace {

std::vector<std::string_view> user_defined_pieces(const SentencePieceModel& m) {
  std::vector<std::string_view> out;
  for (const auto& e : m.pieces)
    if (e.type == SentencePieceEntry::Type::UserDefined) out.push_back(e.piece);
  return out;
}

}  // namespace

Vocabulary::Vocabulary(const SentencePieceModel& model)
    : model_(&model), byte_ids_(256, -1), user_defined_(user_defined_pieces(model)) {
  using Type = SentencePieceEntry::Type;
  normal_.reserve(model.pieces.size());
  for (std::size_t i = 0; i < model.pieces.size(); ++i) {
    const auto& e = model.pieces[i];
    const auto id = static_cast<int32_t>(i);
    const bool is_normal =
        e.type == Type::Normal || e.type == Type::UserDefined || e.type == Type::Unused;
    (is_normal ? normal_ : reserved_).emplace(e.piece, id);
    if (e.type == Type::Unknown) unk_id_ = id;
    if (e.type == Type::Byte) {
      const int b = sentencepiece_byte_value(e.piece);
      if (b >= 0) byte_ids_[static_cast<std::size_t>(b)] = id;
    }
  }
}

int32_t Vocabulary::piece_to_id(std::string_view piece) const {
  if (const auto it = reserved_.find(piece); it != reserved_.end()) return it->second;
  if (const auto it = normal_.find(piece); it != normal_.end()) return it->second;
  return unk_id_;
}

}  // namespace poslens::spm
