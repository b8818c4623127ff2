#pragma once
// HF's WordPiece model (tokenizers/src/models/wordpiece/mod.rs): per word, greedy longest match
// first from the left, pieces after the first carrying the continuing-subword prefix ("##");
// a word with a part no piece matches, or longer than max_input_chars_per_word characters, is
// one unknown token.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/tokenizers/hf_components.h"
#include "core/tokenizers/hf_vocab.h"

namespace poslens::hf {

class WordPieceModel : public Model {
 public:
  /// `vocab`: model.vocab (ids may have gaps). Throws poslens::Error "<where>: ..." when
  /// `unk_token` is not in it (HF fails on the first unknown word instead).
  WordPieceModel(HfVocab vocab, std::string unk_token,
                 std::string continuing_subword_prefix, uint64_t max_input_chars_per_word,
                 const std::string& where);

  void tokenize(std::string_view word, std::vector<ModelToken>& out) const override;
  int64_t token_to_id(const std::string& token) const override;
  const std::string* id_to_token(int64_t id) const override;
  int64_t size() const override { return vocab_.size(); }
  int64_t id_end() const override { return vocab_.id_end(); }
  std::string name() const override { return "WordPiece"; }

 private:
  HfVocab vocab_;
  std::string prefix_;
  uint64_t max_chars_;
  uint32_t unk_id_ = 0;
  size_t longest_piece_ = 0;  ///< bytes: no longer candidate can match
};

}  // namespace poslens::hf
