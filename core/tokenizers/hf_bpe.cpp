#include "core/tokenizers/hf_bpe.h"

#include <algorithm>

#include "core/base/error.h"
#include "core/base/text.h"

namespace poslens::hf {
namespace {

/// Words longer than this are not cached (HF: MAX_LENGTH of its BPE cache); the cache stops
/// growing at kCacheEntries.
constexpr size_t kCacheWordBytes = 256;
constexpr size_t kCacheEntries = 200'000;

uint64_t pair_key(uint32_t a, uint32_t b) { return (uint64_t(a) << 32) | b; }

}  // namespace

BpeModel::BpeModel(HfVocab vocab, const std::vector<std::pair<std::string, std::string>>& merges,
                   BpeOptions options, const std::string& where)
    : vocab_(std::move(vocab)), options_(std::move(options)) {
  const size_t prefix = options_.continuing_subword_prefix.size();
  merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    // Plain references: a lambda below uses them (clang before 16 refuses captured bindings).
    const auto& a = merges[rank].first;
    const auto& b = merges[rank].second;
    const auto ia = vocab_.by_token().find(a), ib = vocab_.by_token().find(b);
    auto fail = [&](const std::string& token) {
      throw Error(where + ": model.merges[" + std::to_string(rank) + "] (" + poslens::quoted(a + " " + b) +
                  ") names the token " + poslens::quoted(token) + ", which is not in model.vocab");
    };
    if (ia == vocab_.by_token().end()) fail(a);
    if (ib == vocab_.by_token().end()) fail(b);
    const std::string merged = a + (b.size() >= prefix ? b.substr(prefix) : std::string());
    const auto im = vocab_.by_token().find(merged);
    if (im == vocab_.by_token().end()) fail(merged);
    merges_[pair_key(ia->second, ib->second)] = {static_cast<uint32_t>(rank), im->second};
  }
  if (!options_.unk_token.empty()) {
    const auto it = vocab_.by_token().find(options_.unk_token);
    if (it == vocab_.by_token().end())
      throw Error(where + ": model.unk_token " + poslens::quoted(options_.unk_token) +
                  " is not in model.vocab");
    unk_id_ = it->second;
  }
  all_bytes_ = true;
  for (int b = 0; b < 256; ++b) {
    static const char* hex = "0123456789ABCDEF";
    const std::string name = std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">";
    const auto it = vocab_.by_token().find(name);
    byte_ids_[static_cast<size_t>(b)] = it == vocab_.by_token().end() ? int64_t{-1} : static_cast<int64_t>(it->second);
    all_bytes_ &= it != vocab_.by_token().end();
  }
}

int64_t BpeModel::token_to_id(const std::string& token) const {
  return vocab_.id(token);
}

const std::string* BpeModel::id_to_token(int64_t id) const {
  return vocab_.token(id);
}

void BpeModel::merge_word(std::string_view word, std::vector<Symbol>& symbols) const {
  symbols.clear();
  auto add = [&](uint32_t id, uint32_t length) {
    const auto n = static_cast<int32_t>(symbols.size());
    symbols.push_back({id, n - 1, -1, length});
    if (n > 0) symbols[static_cast<size_t>(n - 1)].next = n;
  };
  bool have_unk = false;
  uint32_t unk_length = 0;
  std::string s;
  for (size_t i = 0; i < word.size();) {
    const size_t n = std::min(char_length(static_cast<unsigned char>(word[i])), word.size() - i);
    const bool first = i == 0, last = i + n == word.size();
    s.clear();
    if (!first) s += options_.continuing_subword_prefix;
    s.append(word.data() + i, n);
    if (last) s += options_.end_of_word_suffix;
    i += n;
    const auto it = vocab_.by_token().find(s);
    if (it != vocab_.by_token().end()) {
      if (have_unk) {
        add(static_cast<uint32_t>(unk_id_), unk_length);
        have_unk = false;
      }
      add(it->second, static_cast<uint32_t>(n));
      continue;
    }
    if (options_.byte_fallback) {
      bool all = true;
      for (unsigned char b : s) all &= byte_ids_[b] >= 0;
      if (all) {
        for (unsigned char b : s) add(static_cast<uint32_t>(byte_ids_[b]), 1);
        continue;
      }
    }
    if (unk_id_ >= 0) {
      if (have_unk && options_.fuse_unk) {
        unk_length += static_cast<uint32_t>(n);
      } else {
        if (have_unk) add(static_cast<uint32_t>(unk_id_), unk_length);
        have_unk = true;
        unk_length = static_cast<uint32_t>(n);
      }
    }
  }
  if (have_unk) add(static_cast<uint32_t>(unk_id_), unk_length);
  merge_all(symbols);
}

void BpeModel::merge_all(std::vector<Symbol>& symbols) const {
  struct Merge {
    uint32_t pos, rank, new_id;
    bool operator<(const Merge& o) const {  // the heap pops the largest: lowest rank, then pos
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  // A max-heap by Merge's order (lowest rank, then position, on top) over a vector reserved
  // once. Not std::priority_queue(less, std::move(vector)): its make_heap over the moved-in
  // container makes gcc 13 -O3 warn (-Waggressive-loop-optimizations) about a loop that never runs.
  std::vector<Merge> queue;
  queue.reserve(symbols.size());
  const auto push = [&](const Merge& m) {
    queue.push_back(m);
    std::push_heap(queue.begin(), queue.end());
  };
  auto lookup = [&](uint32_t a, uint32_t b) -> const std::pair<uint32_t, uint32_t>* {
    const auto it = merges_.find(pair_key(a, b));
    return it == merges_.end() ? nullptr : &it->second;
  };
  for (size_t i = 0; i + 1 < symbols.size(); ++i)
    if (const auto* m = lookup(symbols[i].id, symbols[i + 1].id))
      push({static_cast<uint32_t>(i), m->first, m->second});
  while (!queue.empty()) {
    std::pop_heap(queue.begin(), queue.end());
    const Merge top = queue.back();
    queue.pop_back();
    Symbol& current = symbols[top.pos];
    if (current.length == 0 || current.next == -1) continue;
    const auto next_pos = static_cast<size_t>(current.next);
    const Symbol right = symbols[next_pos];
    const auto* target = lookup(current.id, right.id);
    if (target == nullptr || target->second != top.new_id) continue;
    current.id = top.new_id;
    current.length += right.length;
    current.next = right.next;
    symbols[next_pos].length = 0;
    if (right.next > -1 && static_cast<size_t>(right.next) < symbols.size())
      symbols[static_cast<size_t>(right.next)].prev = static_cast<int32_t>(top.pos);
    if (current.prev >= 0) {
      const auto prev = static_cast<size_t>(current.prev);
      if (const auto* m = lookup(symbols[prev].id, current.id))
        push({static_cast<uint32_t>(prev), m->first, m->second});
    }
    if (current.next >= 0 && static_cast<size_t>(current.next) < symbols.size()) {
      if (const auto* m = lookup(current.id, symbols[static_cast<size_t>(current.next)].id))
        push({top.pos, m->first, m->second});
    }
  }
}

void BpeModel::tokenize(std::string_view word, std::vector<ModelToken>& out) const {
  if (word.empty()) return;
  std::string key(word);
  if (options_.ignore_merges) {
    const auto it = vocab_.by_token().find(key);
    if (it != vocab_.by_token().end()) {
      out.push_back({it->second, 0, static_cast<uint32_t>(word.size())});
      return;
    }
  }
  const bool cacheable = word.size() < kCacheWordBytes;
  auto emit = [&](const std::vector<std::pair<uint32_t, uint32_t>>& parts) {
    uint32_t at = 0;
    for (const auto& [id, length] : parts) {
      out.push_back({id, at, at + length});
      at += length;
    }
  };
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    const auto it = cache_.find(key);
    if (it != cache_.end()) {
      emit(it->second);
      return;
    }
  }
  thread_local std::vector<Symbol> symbols;
  merge_word(word, symbols);
  std::vector<std::pair<uint32_t, uint32_t>> parts;
  for (const auto& s : symbols)
    if (s.length != 0) parts.push_back({s.id, s.length});
  emit(parts);
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() < kCacheEntries) cache_.emplace(std::move(key), std::move(parts));
  }
}

WordLevelModel::WordLevelModel(HfVocab vocab, const std::string& unk_token, const std::string&)
    : vocab_(std::move(vocab)) {
  unk_id_ = vocab_.id(unk_token);
}

void WordLevelModel::tokenize(std::string_view word, std::vector<ModelToken>& out) const {
  const auto it = vocab_.by_token().find(std::string(word));
  // HF's token is the word itself (not the reverse lookup, which differs for a shared id).
  if (it != vocab_.by_token().end()) out.push_back({it->second, 0, static_cast<uint32_t>(word.size()), true});
  else if (unk_id_ >= 0) out.push_back({unk_id_, 0, static_cast<uint32_t>(word.size())});
  else throw Error("WordLevel: the word " + poslens::quoted(std::string(word)) +
                   " is not in the vocabulary and the unknown token is missing");
}

int64_t WordLevelModel::token_to_id(const std::string& token) const {
  return vocab_.id(token);
}

const std::string* WordLevelModel::id_to_token(int64_t id) const {
  return vocab_.token(id);
}

}  // namespace poslens::hf
