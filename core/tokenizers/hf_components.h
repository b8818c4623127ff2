#pragma once
// The stages of HF's tokenizer pipeline (tokenizers/src/tokenizer/mod.rs): normalizer,
// pre-tokenizer, model, post-processor and decoder, each an interface with one implementation
// per tokenizer.json "type", and the readers that build them from tokenizer.json.
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/tokenizers/hf_json.h"
#include "core/tokenizers/hf_normalized.h"

namespace poslens::hf {

/// A token with its byte range in the text it was found in.
struct Token {
  int64_t id;
  std::string value;
  size_t start, end;
};

/// One piece of the text on its way through the pipeline (HF PreTokenizedString's Split):
/// once `has_tokens`, later stages leave it alone (an added token, or the model's output).
struct Piece {
  NormalizedText text;
  std::vector<Token> tokens;
  bool has_tokens = false;
};

/// The encoding a post-processor works on (HF Encoding, single sequence). `details` false:
/// ids only (tokens and offsets are left empty).
struct EncodingParts {
  bool details = true;
  /// The input text: HF post-processes offsets counted in characters (encode_char_offsets).
  const std::string* input = nullptr;
  std::vector<int64_t> ids;
  std::vector<std::string> tokens;
  std::vector<Span> offsets;
};

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(NormalizedText& text) const = 0;
  virtual std::string name() const = 0;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  /// Splits (and may transform) every piece without tokens; drops pieces left empty.
  virtual void pre_tokenize(std::vector<Piece>& pieces) const = 0;
  virtual std::string name() const = 0;
};

/// A word piece of the model's output: the id and the byte range within the word. `raw`: the
/// token's text is those bytes of the word, not the id's piece (HF Unigram's unknown tokens).
struct ModelToken {
  int64_t id;
  uint32_t start, end;
  bool raw = false;
};

class Model {
 public:
  virtual ~Model() = default;
  /// Appends the tokens of `word` (non-empty) to `out`.
  virtual void tokenize(std::string_view word, std::vector<ModelToken>& out) const = 0;
  /// Id of `token`, or -1.
  virtual int64_t token_to_id(const std::string& token) const = 0;
  /// The piece of `id`, or nullptr.
  virtual const std::string* id_to_token(int64_t id) const = 0;
  /// Number of entries (HF get_vocab_size without added tokens).
  virtual int64_t size() const = 0;
  /// One past the largest id: size() unless the vocabulary's ids have gaps.
  virtual int64_t id_end() const { return size(); }
  virtual std::string name() const = 0;
};

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  /// HF process for a single sequence; `add_special`: HF add_special_tokens.
  virtual void process(EncodingParts& encoding, bool add_special) const = 0;
  /// The ids a template / BOS-EOS processor puts before and after the sequence.
  virtual void special_ids(std::vector<int64_t>& before, std::vector<int64_t>& after) const {
    (void)before;
    (void)after;
  }
  virtual std::string name() const = 0;
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  /// HF decode_chain. `alone`: the one token is shown by itself (token_text), so rules for
  /// the first token of a text (Strip, Metaspace's leading space, WordPiece) do not apply and
  /// bytes stay raw instead of becoming U+FFFD.
  virtual std::vector<std::string> decode_chain(std::vector<std::string> tokens,
                                                bool alone) const = 0;
  virtual std::string name() const = 0;
};

// Readers: each throws poslens::Error naming the file and the field for an unknown type, a
// missing or mistyped field, a value HF's reader refuses, or a regex that does not compile.
std::unique_ptr<Normalizer> read_normalizer(const Field& field);
/// {"type": "BertNormalizer", ...} (hf_bert_normalizer.cpp).
std::unique_ptr<Normalizer> read_bert_normalizer(const Field& field);
/// {"type": "Precompiled", "precompiled_charsmap": base64} (hf_precompiled.cpp).
std::unique_ptr<Normalizer> read_precompiled_normalizer(const Field& field);
std::unique_ptr<PreTokenizer> read_pre_tokenizer(const Field& field);
/// `vocab_size`: ids the post-processor names must be below it.
std::unique_ptr<PostProcessor> read_post_processor(const Field& field, int64_t vocab_size);
std::unique_ptr<Decoder> read_decoder(const Field& field);
std::unique_ptr<Model> read_model(const Field& field);

/// A Split / Replace pattern ({"String": s} or {"Regex": r}) as a regex in HF's (Oniguruma)
/// syntax, which hf_regex.h runs.
std::string read_pattern(const Field& field);
SplitBehavior read_behavior(const Field& field);

/// GPT-2's byte-to-character table (HF pre_tokenizers/byte_level.rs bytes_char): printable
/// bytes stay themselves, the others become U+0100 + n.
const std::array<char32_t, 256>& byte_to_char();
/// The byte a ByteLevel character stands for, or -1.
int char_to_byte(char32_t c);

/// HF ByteLevel offsets trimming (pre_tokenizers/byte_level.rs process_offsets).
void trim_offsets(EncodingParts& encoding, bool add_prefix_space);

}  // namespace poslens::hf
