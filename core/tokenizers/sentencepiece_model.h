#pragma once
// SentencePiece's tokenizer.model (a serialized sentencepiece.ModelProto) as a plain struct.
// Field numbers and defaults follow google/sentencepiece src/sentencepiece_model.proto; only
// the fields that change encoding or decoding are kept, the training-only ones are skipped.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace poslens {

/// One vocabulary entry (ModelProto.SentencePiece).
struct SentencePieceEntry {
  enum class Type : int32_t {
    Normal = 1,
    Unknown = 2,
    Control = 3,
    UserDefined = 4,
    Unused = 5,
    Byte = 6,
  };
  std::string piece;   // field 1; never empty after validation
  float score = 0.0f;  // field 2
  Type type = Type::Normal;  // field 3
};

/// TrainerSpec, the fields that matter for encoding and decoding.
struct SentencePieceTrainerSpec {
  enum class ModelType : int32_t { Unigram = 1, Bpe = 2, Word = 3, Char = 4 };
  ModelType model_type = ModelType::Unigram;  // field 3
  int32_t vocab_size = 8000;                  // field 4
  bool split_by_unicode_script = true;        // 21 (training only)
  bool split_by_whitespace = true;            // 22 (training only)
  bool split_by_number = true;                // 23 (training only)
  bool treat_whitespace_as_suffix = false;    // 24
  bool split_digits = false;                  // 25 (training only)
  bool allow_whitespace_only_pieces = false;  // 26
  bool byte_fallback = false;                 // 35
  int32_t unk_id = 0;                         // 40
  int32_t bos_id = 1;                         // 41
  int32_t eos_id = 2;                         // 42
  int32_t pad_id = -1;                        // 43
  std::string unk_surface = " \xE2\x81\x87 ";  // 44 (" ⁇ ")
  std::string unk_piece = "<unk>";            // 45
  std::string bos_piece = "<s>";              // 46
  std::string eos_piece = "</s>";             // 47
  std::string pad_piece = "<pad>";            // 48
};

/// NormalizerSpec (also used for the optional denormalizer).
struct SentencePieceNormalizerSpec {
  std::string name;                   // field 1 ("identity", "nmt_nfkc", ...)
  std::string precompiled_charsmap;   // 2: <uint32 trie bytes><double-array trie><NUL-separated strings>
  bool add_dummy_prefix = true;       // 3
  bool remove_extra_whitespaces = true;  // 4
  bool escape_whitespaces = true;     // 5
};

struct SentencePieceModel {
  std::vector<SentencePieceEntry> pieces;                  // ModelProto field 1
  SentencePieceTrainerSpec trainer;                        // 2
  SentencePieceNormalizerSpec normalizer;                  // 3
  std::optional<SentencePieceNormalizerSpec> denormalizer;  // 5
};

/// Limits on untrusted files. Real ones: Llama-2 500 KB / 32000 pieces, Gemma 4.2 MB / 256000.
constexpr std::size_t kMaxSentencePieceFileBytes = std::size_t{256} << 20;
constexpr std::size_t kMaxSentencePieces = std::size_t{1} << 22;

/// Parses a serialized ModelProto. `name` (the file path) starts every error message.
/// Strict where protobuf itself is lenient: a known field with the wrong wire type, an enum
/// value SentencePiece does not define (piece type, model_type), more than
/// kMaxSentencePieces pieces, or no pieces at all throw poslens::Error naming the field.
/// Unknown fields are skipped (after checking that they are well formed).
/// Also checks what SentencePiece's ModelInterface::InitializePieces checks: no empty or
/// duplicated piece, exactly one UNKNOWN piece, BYTE pieces only with byte_fallback, spelled
/// "<0xHH>" (upper-case hex), and all 256 of them when byte_fallback is set.
SentencePieceModel parse_sentencepiece_model(std::string_view data, const std::string& name);

/// Reads and parses `path`; throws poslens::Error if it cannot be read, is larger than
/// kMaxSentencePieceFileBytes, or does not parse (see parse_sentencepiece_model).
SentencePieceModel read_sentencepiece_model(const std::string& path);

/// The byte of a "<0xHH>" piece (upper-case hex, as SentencePiece's ByteToPiece writes it), or
/// -1 for any other piece.
int sentencepiece_byte_value(std::string_view piece);

/// "NORMAL", "BYTE", ... for messages.
const char* sentencepiece_type_name(SentencePieceEntry::Type type);
/// "UNIGRAM", "BPE", "WORD", "CHAR".
const char* sentencepiece_model_type_name(SentencePieceTrainerSpec::ModelType type);

}  // namespace poslens
