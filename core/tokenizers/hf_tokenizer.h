#pragma once
// HF `tokenizers`' tokenizer.json, read in full: added tokens, normalizer, pre-tokenizer, model
// (BPE, WordLevel, WordPiece, Unigram), post-processor and decoder, with ids, pieces and offsets
// equal to those of HF's Rust implementation (checked against it in
// tests/core/tokenizers/test_hf_tokenizer*.cpp with data from tools/make_tokenizer_reference.js
// and tools/make_bert_t5_reference.js). The pipeline is HF's Tokenizer::encode_single_sequence +
// post_process; each stage lives in its own file (hf_normalizers.cpp, hf_bert_normalizer.cpp,
// hf_precompiled.cpp, hf_pre_tokenizers.cpp, hf_bpe.cpp, hf_wordpiece.cpp, hf_unigram.cpp,
// hf_post_processors.cpp, hf_decoders.cpp, hf_added_vocabulary.cpp).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tokenizers/tokenizer.h"

namespace poslens {

namespace hf {
class AddedVocabulary;
class Decoder;
class Model;
class Normalizer;
class PostProcessor;
class PreTokenizer;
struct EncodingParts;
}  // namespace hf

/// BOS / EOS names from a transformers tokenizer_config.json (tokens may be strings or
/// {"content": ...} objects). Empty strings for absent ones.
struct TokenizerConfig {
  std::string bos_token, eos_token;
  bool add_bos_token = false, add_eos_token = false;
  bool has_add_bos_token = false;  ///< the file names add_bos_token (else a class default applies)
  bool present = false;  ///< the file was there
};
/// Reads `path` if it exists (an absent file gives present=false); throws poslens::Error naming
/// the file and field for a damaged one.
TokenizerConfig read_tokenizer_config(const std::string& path);

class HfTokenizer : public Tokenizer {
 public:
  /// Reads a tokenizer.json (at most 64 MiB) and, when present beside it, tokenizer_config.json
  /// for BOS / EOS the tokenizer.json does not name. Throws poslens::Error naming the file and
  /// the field for anything unsupported, malformed or hostile.
  static HfTokenizer read(const std::string& path);
  /// The same from tokenizer.json text; `where` names it in messages.
  static HfTokenizer from_json(const std::string& json_text, const std::string& where,
                               const TokenizerConfig& config = {});
  /// GPT-2's original files, as transformers' GPT2TokenizerFast builds them: BPE from
  /// vocab.json + merges.txt, ByteLevel pre-tokenizer (add_prefix_space=false), decoder and
  /// post-processor (trim_offsets), `<|endoftext|>` as special token, BOS and EOS.
  static HfTokenizer from_gpt2_files(const std::string& vocab_json, const std::string& merges_txt);

  HfTokenizer(HfTokenizer&&) noexcept;
  HfTokenizer& operator=(HfTokenizer&&) noexcept;
  ~HfTokenizer() override;

  /// HF encode(text, add_special_tokens=add_bos).getIds(). Throws poslens::Error for text that
  /// is not valid UTF-8 (HF takes only Unicode strings).
  std::vector<int64_t> encode(const std::string& text, bool add_bos) const override;
  /// Ids, HF's getTokens() and getOffsets() as byte offsets into `text`.
  Encoding encode_full(const std::string& text, bool add_special) const override;
  /// HF decode(ids, skip_special_tokens=true). Throws for ids outside the vocabulary.
  std::string decode(const std::vector<int64_t>& ids) const override;
  /// The raw piece (HF id_to_token).
  std::string piece(int64_t id) const override;
  /// The piece decoded alone, for display: ByteLevel characters as their bytes, "▁" as a
  /// space, "<0x0A>" as "\n"; added tokens as written.
  std::string token_text(int64_t id) const override;
  int64_t vocab_size() const override { return vocab_size_; }
  int64_t bos_id() const override { return bos_; }
  int64_t eos_id() const override { return eos_; }
  std::vector<int64_t> special_ids() const override;
  std::string describe() const override;

  /// Id of a piece (added tokens first, as HF token_to_id), or -1.
  int64_t id_of(const std::string& piece) const;

 private:
  HfTokenizer();
  void encode_parts(const std::string& text, bool add_special, hf::EncodingParts& out) const;
  void finish(const TokenizerConfig& config, const std::string& where);

  std::unique_ptr<hf::Normalizer> normalizer_;
  std::unique_ptr<hf::PreTokenizer> pre_tokenizer_;
  std::unique_ptr<hf::Model> model_;
  std::unique_ptr<hf::PostProcessor> post_processor_;
  std::unique_ptr<hf::Decoder> decoder_;
  std::unique_ptr<hf::AddedVocabulary> added_;
  int64_t vocab_size_ = 0;
  int64_t bos_ = -1, eos_ = -1;
  bool config_adds_bos_ = false, config_adds_eos_ = false;  ///< no post-processor, config says so
  std::string source_;
};

}  // namespace poslens
