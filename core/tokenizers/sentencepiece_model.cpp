// tokenizer.model (sentencepiece.ModelProto) -> SentencePieceModel. Field numbers from
// google/sentencepiece src/sentencepiece_model.proto; the checks after parsing mirror
// src/model_interface.cc ModelInterface::InitializePieces.
#include "core/tokenizers/sentencepiece_model.h"

#include <array>
#include <sstream>
#include <unordered_map>

#include "core/base/error.h"
#include "core/base/mapped_file.h"
#include "core/tokenizers/protobuf_wire.h"

namespace poslens {
namespace {

using protobuf::Field;
using protobuf::Reader;
using protobuf::WireType;

SentencePieceEntry parse_piece(Reader r, std::size_t index) {
  SentencePieceEntry e;
  Field f;
  while (r.next(f)) {
    switch (f.number) {
      case 1: e.piece = std::string(r.bytes(f, "piece")); break;
      case 2: e.score = r.float32(f, "score"); break;
      case 3: {
        const int32_t t = r.int32(f, "type");
        if (t < 1 || t > 6) {
          std::ostringstream s;
          s << "type: " << t << " is not a SentencePiece piece type (1..6) in piece " << index;
          r.fail(s.str(), f.offset);
        }
        e.type = static_cast<SentencePieceEntry::Type>(t);
        break;
      }
      default: break;  // unknown field (e.g. extensions): skipped
    }
  }
  return e;
}

void parse_trainer(Reader r, SentencePieceTrainerSpec& t) {
  Field f;
  while (r.next(f)) {
    switch (f.number) {
      case 3: {
        const int32_t v = r.int32(f, "model_type");
        if (v < 1 || v > 4) {
          std::ostringstream s;
          s << "model_type: " << v << " is not a SentencePiece model type (1 UNIGRAM, 2 BPE, "
            << "3 WORD, 4 CHAR)";
          r.fail(s.str(), f.offset);
        }
        t.model_type = static_cast<SentencePieceTrainerSpec::ModelType>(v);
        break;
      }
      case 4: t.vocab_size = r.int32(f, "vocab_size"); break;
      case 21: t.split_by_unicode_script = r.boolean(f, "split_by_unicode_script"); break;
      case 22: t.split_by_whitespace = r.boolean(f, "split_by_whitespace"); break;
      case 23: t.split_by_number = r.boolean(f, "split_by_number"); break;
      case 24: t.treat_whitespace_as_suffix = r.boolean(f, "treat_whitespace_as_suffix"); break;
      case 25: t.split_digits = r.boolean(f, "split_digits"); break;
      case 26: t.allow_whitespace_only_pieces = r.boolean(f, "allow_whitespace_only_pieces"); break;
      case 35: t.byte_fallback = r.boolean(f, "byte_fallback"); break;
      case 40: t.unk_id = r.int32(f, "unk_id"); break;
      case 41: t.bos_id = r.int32(f, "bos_id"); break;
      case 42: t.eos_id = r.int32(f, "eos_id"); break;
      case 43: t.pad_id = r.int32(f, "pad_id"); break;
      case 44: t.unk_surface = std::string(r.bytes(f, "unk_surface")); break;
      case 45: t.unk_piece = std::string(r.bytes(f, "unk_piece")); break;
      case 46: t.bos_piece = std::string(r.bytes(f, "bos_piece")); break;
      case 47: t.eos_piece = std::string(r.bytes(f, "eos_piece")); break;
      case 48: t.pad_piece = std::string(r.bytes(f, "pad_piece")); break;
      default: break;  // training parameters: skipped
    }
  }
}

void parse_normalizer(Reader r, SentencePieceNormalizerSpec& n) {
  Field f;
  while (r.next(f)) {
    switch (f.number) {
      case 1: n.name = std::string(r.bytes(f, "name")); break;
      case 2: n.precompiled_charsmap = std::string(r.bytes(f, "precompiled_charsmap")); break;
      case 3: n.add_dummy_prefix = r.boolean(f, "add_dummy_prefix"); break;
      case 4: n.remove_extra_whitespaces = r.boolean(f, "remove_extra_whitespaces"); break;
      case 5: n.escape_whitespaces = r.boolean(f, "escape_whitespaces"); break;
      default: break;  // normalization_rule_tsv (6, training only) and extensions
    }
  }
}

/// Fails with "<name>: <what>" (no offset: the problem is the vocabulary as a whole).
[[noreturn]] void fail(const std::string& name, const std::string& what) {
  throw Error(name + ": " + what);
}

void validate(const SentencePieceModel& m, const std::string& name) {
  using Type = SentencePieceEntry::Type;
  if (m.pieces.empty()) fail(name, "ModelProto.pieces: the model has no pieces");
  // Two maps as in SentencePiece: normal pieces (NORMAL, USER_DEFINED, UNUSED) and reserved
  // ones (UNKNOWN, CONTROL, BYTE); a piece may appear once in each.
  std::unordered_map<std::string_view, std::size_t> normal, reserved;
  normal.reserve(m.pieces.size());
  std::array<bool, 256> byte_found{};
  int64_t unk = -1;
  for (std::size_t i = 0; i < m.pieces.size(); ++i) {
    const SentencePieceEntry& e = m.pieces[i];
    std::ostringstream where;
    where << "ModelProto.pieces[" << i << "]";
    if (e.piece.empty()) fail(name, where.str() + ".piece: empty piece");
    const bool is_normal =
        e.type == Type::Normal || e.type == Type::UserDefined || e.type == Type::Unused;
    auto& map = is_normal ? normal : reserved;
    const auto [it, inserted] = map.emplace(e.piece, i);
    if (!inserted) {
      std::ostringstream s;
      s << where.str() << ".piece: \"" << e.piece << "\" is already piece " << it->second;
      fail(name, s.str());
    }
    if (e.type == Type::Unknown) {
      if (unk >= 0) {
        std::ostringstream s;
        s << where.str() << ".type: a second UNKNOWN piece (the first is piece " << unk << ")";
        fail(name, s.str());
      }
      unk = static_cast<int64_t>(i);
    }
    if (e.type == Type::Byte) {
      if (!m.trainer.byte_fallback)
        fail(name, where.str() + ": byte piece \"" + e.piece +
                       "\" although trainer_spec.byte_fallback is false");
      const int b = sentencepiece_byte_value(e.piece);
      if (b < 0) fail(name, where.str() + ".piece: \"" + e.piece + "\" is not a byte piece <0xHH>");
      byte_found[static_cast<std::size_t>(b)] = true;
    }
  }
  if (unk < 0) fail(name, "ModelProto.pieces: no piece of type UNKNOWN");
  if (m.trainer.byte_fallback) {
    for (int b = 0; b < 256; ++b) {
      if (!byte_found[static_cast<std::size_t>(b)]) {
        std::ostringstream s;
        s << "trainer_spec.byte_fallback is true but byte piece <0x" << std::hex
          << std::uppercase << (b < 16 ? "0" : "") << b << "> is missing";
        fail(name, s.str());
      }
    }
  }
}

}  // namespace

int sentencepiece_byte_value(std::string_view piece) {
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return -1;
  auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  const int hi = hex(piece[3]), lo = hex(piece[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

const char* sentencepiece_type_name(SentencePieceEntry::Type type) {
  switch (type) {
    case SentencePieceEntry::Type::Normal: return "NORMAL";
    case SentencePieceEntry::Type::Unknown: return "UNKNOWN";
    case SentencePieceEntry::Type::Control: return "CONTROL";
    case SentencePieceEntry::Type::UserDefined: return "USER_DEFINED";
    case SentencePieceEntry::Type::Unused: return "UNUSED";
    case SentencePieceEntry::Type::Byte: return "BYTE";
  }
  return "?";
}

const char* sentencepiece_model_type_name(SentencePieceTrainerSpec::ModelType type) {
  switch (type) {
    case SentencePieceTrainerSpec::ModelType::Unigram: return "UNIGRAM";
    case SentencePieceTrainerSpec::ModelType::Bpe: return "BPE";
    case SentencePieceTrainerSpec::ModelType::Word: return "WORD";
    case SentencePieceTrainerSpec::ModelType::Char: return "CHAR";
  }
  return "?";
}

SentencePieceModel parse_sentencepiece_model(std::string_view data, const std::string& name) {
  if (data.size() > kMaxSentencePieceFileBytes) {
    std::ostringstream s;
    s << "tokenizer model of " << data.size() << " bytes is larger than the limit "
      << kMaxSentencePieceFileBytes;
    fail(name, s.str());
  }
  if (data.empty()) fail(name, "empty file (expected a SentencePiece ModelProto)");
  SentencePieceModel m;
  Reader r(data, name + ": ModelProto");
  Field f;
  while (r.next(f)) {
    switch (f.number) {
      case 1: {
        if (m.pieces.size() >= kMaxSentencePieces) {
          std::ostringstream s;
          s << "pieces: more than " << kMaxSentencePieces << " pieces";
          r.fail(s.str(), f.offset);
        }
        std::ostringstream ctx;
        ctx << "pieces[" << m.pieces.size() << "]";
        const std::string c = ctx.str();
        m.pieces.push_back(parse_piece(r.message(f, c.c_str()), m.pieces.size()));
        break;
      }
      // Repeated occurrences of a sub-message merge into one, as protobuf does.
      case 2: parse_trainer(r.message(f, "trainer_spec"), m.trainer); break;
      case 3: parse_normalizer(r.message(f, "normalizer_spec"), m.normalizer); break;
      case 5:
        if (!m.denormalizer) m.denormalizer.emplace();
        parse_normalizer(r.message(f, "denormalizer_spec"), *m.denormalizer);
        break;
      default: break;  // self_test_data (4) and extensions: checked for form, skipped
    }
  }
  validate(m, name);
  return m;
}

SentencePieceModel read_sentencepiece_model(const std::string& path) {
  const auto file = MappedFile::open(path);
  if (file->size() > kMaxSentencePieceFileBytes) {
    std::ostringstream s;
    s << "tokenizer model of " << file->size() << " bytes is larger than the limit "
      << kMaxSentencePieceFileBytes;
    fail(path, s.str());
  }
  return parse_sentencepiece_model(
      std::string_view(reinterpret_cast<const char*>(file->bytes()), file->size()), path);
}

}  // namespace poslens
