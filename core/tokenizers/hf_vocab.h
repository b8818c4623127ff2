#pragma once
// model.vocab {"token": id} of HF's BPE, WordLevel and WordPiece models, held as HF holds it
// (tokenizers/src/models/{bpe,wordlevel,wordpiece}: a HashMap<String, u32> and its reverse).
// Ids need not number 0..n-1: tiktoken conversions leave gaps, and HF loads them.
#include <cstdint>
#include <string>
#include <unordered_map>

namespace poslens::hf {

class HfVocab {
 public:
  HfVocab() = default;
  /// `by_token`: token -> id. Two tokens may share an id (HF accepts that too); the reverse
  /// lookup then gives the smallest token in byte order, where HF's depends on its hash order.
  explicit HfVocab(std::unordered_map<std::string, uint32_t> by_token);
  // Moves keep the map's nodes and so the reverse's pointers; a copy would not.
  HfVocab(HfVocab&&) = default;
  HfVocab& operator=(HfVocab&&) = default;
  HfVocab(const HfVocab&) = delete;
  HfVocab& operator=(const HfVocab&) = delete;

  /// The id of `token`, or -1.
  int64_t id(const std::string& token) const;
  /// The token of `id`, or nullptr for an id no token has (a gap).
  const std::string* token(int64_t id) const;
  /// Number of entries: HF's get_vocab_size, which numbers added tokens that follow.
  int64_t size() const { return static_cast<int64_t>(by_token_.size()); }
  /// One past the largest id (0 when empty): the embedding rows the ids need.
  int64_t id_end() const { return id_end_; }
  const std::unordered_map<std::string, uint32_t>& by_token() const { return by_token_; }

 private:
  std::unordered_map<std::string, uint32_t> by_token_;
  std::unordered_map<uint32_t, const std::string*> by_id_;  ///< points into by_token_'s keys
  int64_t id_end_ = 0;
};

}  // namespace poslens::hf
