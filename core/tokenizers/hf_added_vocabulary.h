#pragma once
// HF's AddedVocabulary (tokenizers/src/tokenizer/added_vocabulary.rs): tokens from
// tokenizer.json "added_tokens", found in the text before the rest of the pipeline runs. Tokens
// with normalized=false are matched in the raw text, the others in the normalized pieces; both
// leftmost-longest, then filtered by single_word and widened by lstrip / rstrip.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/tokenizers/hf_components.h"

namespace poslens::hf {

struct AddedToken {
  std::string content;
  bool single_word = false, lstrip = false, rstrip = false, normalized = true, special = false;
  int64_t id = -1;
  std::string pattern;  ///< what is matched: content, normalized when `normalized`
};

class AddedVocabulary {
 public:
  /// HF add_tokens: an id from the model's vocabulary when the content is there, otherwise the
  /// next id after the model's (tokenizer.json's "id" is not used, as in HF). Empty contents
  /// are skipped.
  void add(std::vector<AddedToken> tokens, const Model& model, const Normalizer* normalizer);

  /// The input cut into pieces, added tokens done, the rest normalized (HF
  /// extract_and_normalize).
  std::vector<Piece> extract_and_normalize(const std::string& input,
                                           const Normalizer* normalizer) const;

  /// Id of `content` among added tokens, or -1.
  int64_t id_of(const std::string& content) const;
  /// The token of `id`, or nullptr.
  const AddedToken* token(int64_t id) const;
  bool is_special(const std::string& content) const { return special_.count(content) != 0; }
  const std::unordered_map<int64_t, AddedToken>& by_id() const { return by_id_; }
  int64_t max_id() const;

 private:
  struct Trie {
    struct Node {
      std::unordered_map<unsigned char, int32_t> next;
      int64_t id = -1;  ///< token ending here
    };
    std::vector<Node> nodes{Node{}};
    std::array<bool, 256> first{};
    void insert(const std::string& s, int64_t id);
    bool empty() const { return nodes.size() == 1; }
  };
  void rebuild();
  void split(std::vector<Piece>& pieces, const Trie& trie) const;

  std::unordered_map<std::string, int64_t> by_content_;
  std::unordered_map<int64_t, AddedToken> by_id_;
  std::unordered_set<std::string> special_;
  Trie raw_, normalized_;
};

}  // namespace poslens::hf
