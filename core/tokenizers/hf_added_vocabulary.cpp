#include "core/tokenizers/hf_added_vocabulary.h"

#include <algorithm>

namespace poslens::hf {
namespace {

/// Rust regex `\w$` on text[0, end): the character before `end` is a word character.
bool ends_with_word(const std::string& text, size_t end) {
  if (end == 0) return false;
  size_t i = end - 1;
  while (i > 0 && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) --i;
  size_t n;
  return is_word(next_char(text, i, &n));
}

bool starts_with_word(const std::string& text, size_t start) {
  if (start >= text.size()) return false;
  size_t n;
  return is_word(next_char(text, start, &n));
}

/// Start of the whitespace run that ends at `end` (Rust `\s*$` on text[0, end)).
size_t whitespace_before(const std::string& text, size_t end) {
  size_t at = end;
  while (at > 0) {
    size_t i = at - 1;
    while (i > 0 && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) --i;
    size_t n;
    if (!is_whitespace(next_char(text, i, &n))) break;
    at = i;
  }
  return at;
}

/// End of the whitespace run that starts at `start`.
size_t whitespace_after(const std::string& text, size_t start) {
  size_t at = start;
  while (at < text.size()) {
    size_t n;
    if (!is_whitespace(next_char(text, at, &n))) break;
    at += n;
  }
  return at;
}

}  // namespace

void AddedVocabulary::Trie::insert(const std::string& s, int64_t id) {
  int32_t node = 0;
  for (unsigned char c : s) {
    const auto it = nodes[static_cast<size_t>(node)].next.find(c);
    if (it != nodes[static_cast<size_t>(node)].next.end()) {
      node = it->second;
    } else {
      const auto fresh = static_cast<int32_t>(nodes.size());
      nodes.emplace_back();
      nodes[static_cast<size_t>(node)].next[c] = fresh;
      node = fresh;
    }
  }
  nodes[static_cast<size_t>(node)].id = id;
  if (!s.empty()) first[static_cast<unsigned char>(s[0])] = true;
}

void AddedVocabulary::add(std::vector<AddedToken> tokens, const Model& model,
                          const Normalizer* normalizer) {
  int64_t next_id = model.size();
  if (!by_id_.empty()) next_id = std::max(next_id, max_id() + 1);
  for (auto& token : tokens) {
    if (token.content.empty()) continue;
    int64_t id;
    const auto known = by_content_.find(token.content);
    if (known != by_content_.end()) id = known->second;
    else if ((id = model.token_to_id(token.content)) < 0) id = next_id++;
    token.id = id;
    token.pattern = token.content;
    if (token.normalized && normalizer != nullptr) {
      NormalizedText t = NormalizedText::from_input(token.content, 0, token.content.size());
      normalizer->normalize(t);
      token.pattern = t.text;
    }
    by_content_[token.content] = id;
    if (token.special) special_.insert(token.content);
    by_id_[id] = std::move(token);
  }
  rebuild();
}

void AddedVocabulary::rebuild() {
  raw_ = Trie();
  normalized_ = Trie();
  // Later ids win a shared pattern, as HF's trie keeps the last value for a repeated pattern
  // (its patterns come from a hash map: any one of them; ids make it deterministic here).
  std::vector<const AddedToken*> ordered;
  for (const auto& [id, t] : by_id_) ordered.push_back(&t);
  std::sort(ordered.begin(), ordered.end(),
            [](const AddedToken* a, const AddedToken* b) { return a->id < b->id; });
  for (const auto* t : ordered)
    if (!t->pattern.empty()) (t->normalized ? normalized_ : raw_).insert(t->pattern, t->id);
}

int64_t AddedVocabulary::id_of(const std::string& content) const {
  const auto it = by_content_.find(content);
  return it == by_content_.end() ? -1 : it->second;
}

const AddedToken* AddedVocabulary::token(int64_t id) const {
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &it->second;
}

int64_t AddedVocabulary::max_id() const {
  int64_t m = -1;
  for (const auto& [id, t] : by_id_) m = std::max(m, id);
  return m;
}

void AddedVocabulary::split(std::vector<Piece>& pieces, const Trie& trie) const {
  if (trie.empty()) return;
  std::vector<Piece> out;
  out.reserve(pieces.size());
  for (auto& piece : pieces) {
    if (piece.has_tokens) {
      out.push_back(std::move(piece));
      continue;
    }
    const std::string& s = piece.text.text;
    // Leftmost-longest, non-overlapping matches, then HF find_matches' filters.
    size_t start_offset = 0;
    auto emit = [&](size_t a, size_t b, int64_t id) {
      if (a >= b) return;
      Piece p;
      p.text = piece.text.slice(a, b);
      if (id >= 0) {
        p.has_tokens = true;
        p.tokens.push_back({id, p.text.text, 0, p.text.text.size()});
      }
      out.push_back(std::move(p));
    };
    for (size_t i = 0; i < s.size();) {
      if (!trie.first[static_cast<unsigned char>(s[i])]) { ++i; continue; }
      int32_t node = 0;
      int64_t id = -1;
      size_t end = 0;
      for (size_t k = i; k < s.size(); ++k) {
        const auto& next = trie.nodes[static_cast<size_t>(node)].next;
        const auto it = next.find(static_cast<unsigned char>(s[k]));
        if (it == next.end()) break;
        node = it->second;
        if (trie.nodes[static_cast<size_t>(node)].id >= 0) {
          id = trie.nodes[static_cast<size_t>(node)].id;
          end = k + 1;
        }
      }
      if (id < 0) { ++i; continue; }
      size_t start = i, stop = end;
      i = end;  // the search goes on after this match, whether or not it is kept
      const AddedToken& token = by_id_.at(id);
      if (token.single_word) {
        const bool start_space = start == 0 || !ends_with_word(s, start);
        const bool stop_space = stop == s.size() || !starts_with_word(s, stop);
        if (!start_space || !stop_space) continue;
      }
      if (token.lstrip) start = std::max(whitespace_before(s, start), start_offset);
      if (token.rstrip) stop = whitespace_after(s, stop);
      emit(start_offset, start, -1);
      emit(start, stop, id);
      start_offset = stop;
    }
    emit(start_offset, s.size(), -1);
  }
  pieces = std::move(out);
}

std::vector<Piece> AddedVocabulary::extract_and_normalize(const std::string& input,
                                                          const Normalizer* normalizer) const {
  std::vector<Piece> pieces(1);
  pieces[0].text = NormalizedText::from_input(input, 0, input.size());
  split(pieces, raw_);
  if (normalizer != nullptr)
    for (auto& p : pieces)
      if (!p.has_tokens) normalizer->normalize(p.text);
  split(pieces, normalized_);
  // HF drops pieces left empty by normalization.
  pieces.erase(std::remove_if(pieces.begin(), pieces.end(),
                              [](const Piece& p) { return !p.has_tokens && p.text.empty(); }),
               pieces.end());
  return pieces;
}

}  // namespace poslens::hf
