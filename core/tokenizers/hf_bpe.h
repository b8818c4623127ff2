#pragma once
// HF's BPE model (tokenizers/src/models/bpe/{model,word}.rs): per word, characters are looked up
// (with the continuing-subword prefix / end-of-word suffix, byte fallback and unknown token as
// HF does) and merged by rank with a priority queue; results are cached per word.
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/tokenizers/hf_components.h"
#include "core/tokenizers/hf_vocab.h"

namespace poslens::hf {

struct BpeOptions {
  std::string unk_token;  ///< empty: none
  std::string continuing_subword_prefix;
  std::string end_of_word_suffix;
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;
};

class BpeModel : public Model {
 public:
  /// `vocab`: model.vocab (ids may have gaps). `merges` in rank order. Throws poslens::Error
  /// "<where>: ..." for a merge naming a token outside the vocabulary (or whose result is
  /// outside it) and an unknown token missing from the vocabulary.
  BpeModel(HfVocab vocab, const std::vector<std::pair<std::string, std::string>>& merges,
           BpeOptions options, const std::string& where);

  void tokenize(std::string_view word, std::vector<ModelToken>& out) const override;
  int64_t token_to_id(const std::string& token) const override;
  const std::string* id_to_token(int64_t id) const override;
  int64_t size() const override { return vocab_.size(); }
  int64_t id_end() const override { return vocab_.id_end(); }
  std::string name() const override { return "BPE"; }

 private:
  struct Symbol {
    uint32_t id;
    int32_t prev, next;
    uint32_t length;
  };
  void merge_word(std::string_view word, std::vector<Symbol>& symbols) const;
  void merge_all(std::vector<Symbol>& symbols) const;

  HfVocab vocab_;
  std::unordered_map<uint64_t, std::pair<uint32_t, uint32_t>> merges_;  ///< pair -> rank, new id
  BpeOptions options_;
  int64_t unk_id_ = -1;
  std::array<int64_t, 256> byte_ids_{};  ///< "<0xXX>" ids, -1 when absent
  bool all_bytes_ = false;

  /// word -> (id, byte length) per token; bounded, shared by threads.
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<std::pair<uint32_t, uint32_t>>> cache_;
};

/// HF's WordLevel model: the whole word is one token, or the unknown token.
class WordLevelModel : public Model {
 public:
  WordLevelModel(HfVocab vocab, const std::string& unk_token,
                 const std::string& where);
  void tokenize(std::string_view word, std::vector<ModelToken>& out) const override;
  int64_t token_to_id(const std::string& token) const override;
  const std::string* id_to_token(int64_t id) const override;
  int64_t size() const override { return vocab_.size(); }
  int64_t id_end() const override { return vocab_.id_end(); }
  std::string name() const override { return "WordLevel"; }

 private:
  HfVocab vocab_;
  int64_t unk_id_ = -1;
};

}  // namespace poslens::hf
