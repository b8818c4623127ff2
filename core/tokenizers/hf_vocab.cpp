#include "core/tokenizers/hf_vocab.h"

#include <algorithm>

namespace poslens::hf {

HfVocab::HfVocab(std::unordered_map<std::string, uint32_t> by_token) : by_token_(std::move(by_token)) {
  by_id_.reserve(by_token_.size());
  for (const auto& [token, id] : by_token_) {
    // unordered_map nodes never move, so pointers to keys stay valid.
    const auto [it, added] = by_id_.emplace(id, &token);
    if (!added && token < *it->second) it->second = &token;
    id_end_ = std::max(id_end_, static_cast<int64_t>(id) + 1);
  }
}

int64_t HfVocab::id(const std::string& token) const {
  const auto it = by_token_.find(token);
  return it == by_token_.end() ? int64_t{-1} : static_cast<int64_t>(it->second);
}

const std::string* HfVocab::token(int64_t id) const {
  if (id < 0 || id >= id_end_) return nullptr;
  const auto it = by_id_.find(static_cast<uint32_t>(id));
  return it == by_id_.end() ? nullptr : it->second;
}

}  // namespace poslens::hf
