// SentencePiece tokenizer; the steps follow google/sentencepiece v0.1.97
// src/sentencepiece_processor.cc (Encode + PopulateSentencePieceText, Decode, bos_id/eos_id),
// src/char_model.cc and src/word_model.cc (+ SplitIntoWords in src/model_interface.cc).
#include "core/tokenizers/sentencepiece_tokenizer.h"

#include <optional>
#include <sstream>

#include "core/base/error.h"
#include "core/base/mapped_file.h"
#include "core/tokenizers/sentencepiece_bpe.h"
#include "core/tokenizers/sentencepiece_normalizer.h"
#include "core/tokenizers/sentencepiece_unigram.h"
#include "core/tokenizers/sentencepiece_vocab.h"

namespace poslens {
namespace {

using Type = SentencePieceEntry::Type;
using ModelType = SentencePieceTrainerSpec::ModelType;

/// "\xEF\xBF\xBD" (U+FFFD), SentencePiece's surface for a malformed byte piece.
constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

std::string replace_space_symbol(std::string_view piece) {
  std::string out;
  out.reserve(piece.size());
  for (std::size_t i = 0; i < piece.size();) {
    if (piece.compare(i, spm::kSpaceSymbol.size(), spm::kSpaceSymbol) == 0) {
      out.push_back(' ');
      i += spm::kSpaceSymbol.size();
    } else {
      out.push_back(piece[i++]);
    }
  }
  return out;
}

}  // namespace

struct SentencePieceTokenizer::Impl {
  std::string path;
  SentencePieceModel model;
  std::optional<spm::Vocabulary> vocab;
  std::optional<spm::Normalizer> normalizer;
  std::optional<spm::Normalizer> denormalizer;
  std::optional<spm::BpeSegmenter> bpe;
  std::optional<spm::UnigramSegmenter> unigram;
  int64_t bos = -1, eos = -1;

  void check_id(int64_t id, const char* what) const {
    if (id < 0 || id >= static_cast<int64_t>(model.pieces.size())) {
      std::ostringstream s;
      s << path << ": " << what << ": token id " << id << " is outside the vocabulary [0, "
        << model.pieces.size() << ")";
      throw Error(s.str());
    }
  }

  /// The CONTROL piece named `name`, or -1 (SentencePieceProcessor::bos_id and friends).
  int64_t control_id(const std::string& name) const {
    const int32_t id = vocab->piece_to_id(name);
    return vocab->is(id, Type::Control) ? id : -1;
  }

  void segment(std::string_view normalized, std::vector<spm::Segment>& out) const {
    switch (model.trainer.model_type) {
      case ModelType::Bpe: bpe->encode(normalized, out); return;
      case ModelType::Unigram: unigram->encode(normalized, out); return;
      case ModelType::Char:  // char_model.cc: one piece per character (user-defined whole)
        for (std::size_t pos = 0; pos < normalized.size();) {
          bool found = false;
          const std::size_t n = vocab->user_defined().match(normalized.substr(pos), &found);
          out.push_back({static_cast<uint32_t>(pos), static_cast<uint32_t>(n),
                         vocab->piece_to_id(normalized.substr(pos, n))});
          pos += n;
        }
        return;
      case ModelType::Word: {  // word_model.cc: a word starts at the text and at every "▁"
        std::size_t start = 0;
        auto flush = [&](std::size_t end) {
          if (end > start)
            out.push_back({static_cast<uint32_t>(start), static_cast<uint32_t>(end - start),
                           vocab->piece_to_id(normalized.substr(start, end - start))});
          start = end;
        };
        for (std::size_t pos = 0; pos < normalized.size();) {
          const std::size_t n = std::min(
              spm::utf8_char_len(static_cast<unsigned char>(normalized[pos])),
              normalized.size() - pos);
          if (pos > 0 && normalized.compare(pos, n, spm::kSpaceSymbol) == 0) flush(pos);
          pos += n;
        }
        flush(normalized.size());
        return;
      }
    }
  }

  /// SentencePiece's encode with byte offsets (see the header for the conventions).
  void encode(std::string_view text, Encoding& out, bool want_pieces) const {
    if (text.size() > UINT32_MAX / 8)
      throw Error(path + ": text of " + std::to_string(text.size()) +
                  " bytes is too long to encode");
    std::string normalized;
    std::vector<std::size_t> norm_to_orig;
    normalizer->normalize(text, normalized, norm_to_orig);
    std::vector<spm::Segment> segments;
    segment(normalized, segments);

    const bool byte_fallback = model.trainer.byte_fallback;
    bool prev_unk = false;
    for (const spm::Segment& s : segments) {
      const std::string_view w = std::string_view(normalized).substr(s.begin, s.length);
      const std::size_t begin = norm_to_orig[s.begin];
      const std::size_t end = norm_to_orig[s.begin + s.length];
      const bool unk = vocab->is(s.id, Type::Unknown);
      if (vocab->is(s.id, Type::Control)) {
        out.ids.push_back(s.id);
        if (want_pieces) out.tokens.push_back(model.pieces[s.id].piece);
        out.offsets.emplace_back(begin, begin);
      } else if (unk && byte_fallback) {
        for (const char c : w) {
          const int32_t id = vocab->byte_id(static_cast<unsigned char>(c));
          out.ids.push_back(id);
          if (want_pieces) out.tokens.push_back(model.pieces[id].piece);
          out.offsets.emplace_back(begin, end);
        }
      } else if (unk && prev_unk) {  // a run of unknown pieces is one <unk>
        out.offsets.back().second = end;
      } else {
        out.ids.push_back(s.id);
        if (want_pieces) out.tokens.push_back(model.pieces[s.id].piece);
        out.offsets.emplace_back(begin, end);
      }
      prev_unk = unk;
    }
  }
};

SentencePieceTokenizer::SentencePieceTokenizer() : impl_(std::make_unique<Impl>()) {}
SentencePieceTokenizer::~SentencePieceTokenizer() = default;

std::unique_ptr<SentencePieceTokenizer> SentencePieceTokenizer::from_bytes(
    std::string_view data, const std::string& name) {
  std::unique_ptr<SentencePieceTokenizer> t(new SentencePieceTokenizer());
  Impl& m = *t->impl_;
  m.path = name;
  m.model = parse_sentencepiece_model(data, name);
  m.vocab.emplace(m.model);
  m.normalizer.emplace(m.model.normalizer, m.model.trainer.treat_whitespace_as_suffix,
                       &m.vocab->user_defined(), name);
  if (m.model.denormalizer && !m.model.denormalizer->precompiled_charsmap.empty())
    m.denormalizer.emplace(*m.model.denormalizer, false, nullptr, name + " (denormalizer)");
  if (m.model.trainer.model_type == ModelType::Bpe) m.bpe.emplace(*m.vocab);
  if (m.model.trainer.model_type == ModelType::Unigram) m.unigram.emplace(*m.vocab);
  m.bos = m.control_id(m.model.trainer.bos_piece.empty() ? "<s>" : m.model.trainer.bos_piece);
  m.eos = m.control_id(m.model.trainer.eos_piece.empty() ? "</s>" : m.model.trainer.eos_piece);
  return t;
}

std::unique_ptr<SentencePieceTokenizer> SentencePieceTokenizer::read(const std::string& path) {
  const auto file = MappedFile::open(path);
  if (file->size() > kMaxSentencePieceFileBytes) {
    std::ostringstream s;
    s << path << ": tokenizer model of " << file->size() << " bytes is larger than the limit "
      << kMaxSentencePieceFileBytes;
    throw Error(s.str());
  }
  return from_bytes(std::string_view(reinterpret_cast<const char*>(file->bytes()), file->size()),
                    path);
}

std::vector<int64_t> SentencePieceTokenizer::encode(const std::string& text, bool add_bos) const {
  Encoding e;
  if (add_bos && impl_->bos >= 0) e.ids.push_back(impl_->bos);
  impl_->encode(text, e, false);
  return std::move(e.ids);
}

Encoding SentencePieceTokenizer::encode_full(const std::string& text, bool add_special) const {
  Encoding e;
  if (add_special && impl_->bos >= 0) {
    e.ids.push_back(impl_->bos);
    e.tokens.push_back(impl_->model.pieces[static_cast<std::size_t>(impl_->bos)].piece);
    e.offsets.emplace_back(0, 0);
  }
  impl_->encode(text, e, true);
  return e;
}

std::string SentencePieceTokenizer::piece(int64_t id) const {
  impl_->check_id(id, "piece");
  return impl_->model.pieces[static_cast<std::size_t>(id)].piece;
}

std::string SentencePieceTokenizer::token_text(int64_t id) const {
  impl_->check_id(id, "token_text");
  const SentencePieceEntry& e = impl_->model.pieces[static_cast<std::size_t>(id)];
  if (e.type == Type::Byte) {
    const int b = sentencepiece_byte_value(e.piece);
    if (b >= 0) return std::string(1, static_cast<char>(b));
  }
  return replace_space_symbol(e.piece);
}

std::string SentencePieceTokenizer::decode(const std::vector<int64_t>& ids) const {
  const Impl& m = *impl_;
  const SentencePieceNormalizerSpec& ns = m.model.normalizer;
  std::string text;
  std::string bytes;  // pending byte pieces
  auto flush_bytes = [&] {
    std::string_view rest = bytes;
    while (!rest.empty()) {
      std::size_t n = 0;
      if (spm::utf8_valid_char(rest, &n))
        text.append(rest.substr(0, n));
      else
        text.append(kReplacementChar);
      rest.remove_prefix(n);
    }
    bytes.clear();
  };
  bool is_bos_ws = true;     // a leading "▁" may still be dropped
  bool bos_ws_seen = false;  // the previous piece dropped one
  for (const int64_t raw : ids) {
    m.check_id(raw, "decode");
    const std::string& p = m.model.pieces[static_cast<std::size_t>(raw)].piece;
    const int32_t id = m.vocab->piece_to_id(p);  // as SentencePiece: ids -> pieces -> ids
    const Type type = m.vocab->entry(id).type;
    if (type == Type::Byte) {
      bytes.push_back(static_cast<char>(sentencepiece_byte_value(p)));
      continue;
    }
    flush_bytes();
    if (bos_ws_seen || !text.empty()) is_bos_ws = false;
    if (type == Type::Control) {
      bos_ws_seen = false;
    } else if (type == Type::Unknown) {
      text += m.model.trainer.unk_surface;
      bos_ws_seen = false;
    } else {
      std::string_view piece = p;
      bool has_bos_ws = false;
      if (is_bos_ws && (ns.add_dummy_prefix || ns.remove_extra_whitespaces)) {
        if (piece.compare(0, spm::kSpaceSymbol.size(), spm::kSpaceSymbol) == 0) {
          piece.remove_prefix(spm::kSpaceSymbol.size());
          has_bos_ws = true;
        }
        if (ns.remove_extra_whitespaces) has_bos_ws = false;
      }
      text += replace_space_symbol(piece);
      bos_ws_seen = has_bos_ws;
    }
  }
  flush_bytes();
  if (m.denormalizer) {
    std::string out;
    std::vector<std::size_t> map;
    m.denormalizer->normalize(text, out, map);
    return out;
  }
  return text;
}

int64_t SentencePieceTokenizer::vocab_size() const {
  return static_cast<int64_t>(impl_->model.pieces.size());
}
int64_t SentencePieceTokenizer::bos_id() const { return impl_->bos; }
int64_t SentencePieceTokenizer::eos_id() const { return impl_->eos; }

std::vector<int64_t> SentencePieceTokenizer::special_ids() const {
  std::vector<int64_t> out;
  const auto& pieces = impl_->model.pieces;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const Type t = pieces[i].type;
    if (t == Type::Unknown || t == Type::Control || t == Type::Unused)
      out.push_back(static_cast<int64_t>(i));
  }
  return out;
}

std::string SentencePieceTokenizer::describe() const {
  const SentencePieceModel& m = impl_->model;
  std::ostringstream s;
  s << "SentencePiece " << sentencepiece_model_type_name(m.trainer.model_type)
    << " tokenizer.model, " << m.pieces.size() << " pieces ("
    << (m.trainer.byte_fallback ? "byte fallback, " : "") << "normalizer "
    << (m.normalizer.name.empty() ? "unnamed" : m.normalizer.name) << ")";
  return s.str();
}

const SentencePieceModel& SentencePieceTokenizer::model() const { return impl_->model; }

}  // namespace poslens
