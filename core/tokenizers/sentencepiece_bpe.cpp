// SentencePiece BPE segmentation; semantics from google/sentencepiece src/bpe_model.cc
// (Model::SampleEncode, alpha = 0): same agenda order (score, then leftmost), same staleness
// test, same resegmentation of UNUSED pieces.
#include "core/tokenizers/sentencepiece_bpe.h"

#include <queue>
#include <unordered_map>
#include <utility>

#include "core/base/error.h"

namespace poslens::spm {
namespace {

/// True when `piece` holds "▁" right after a character that is not "▁" (see BpeSegmenter).
bool has_space_after_char(std::string_view piece) {
  for (std::size_t k = piece.find(kSpaceSymbol, 1); k != std::string_view::npos;
       k = piece.find(kSpaceSymbol, k + 1)) {
    if (k < kSpaceSymbol.size() || piece.substr(k - kSpaceSymbol.size(), kSpaceSymbol.size()) !=
                                       kSpaceSymbol)
      return true;
  }
  return false;
}

/// Whether `text` is well-formed UTF-8 (the word cut relies on character boundaries).
bool valid_utf8(std::string_view text) {
  while (!text.empty()) {
    std::size_t n = 0;
    if (!utf8_valid_char(text, &n)) return false;
    text.remove_prefix(n);
  }
  return true;
}

}  // namespace

BpeSegmenter::BpeSegmenter(const Vocabulary& vocab) : vocab_(vocab) {
  using Type = SentencePieceEntry::Type;
  split_words_ = true;
  for (const auto& e : vocab.model().pieces) {
    const bool is_normal =
        e.type == Type::Normal || e.type == Type::UserDefined || e.type == Type::Unused;
    if (is_normal && has_space_after_char(e.piece)) {
      split_words_ = false;
      break;
    }
  }
}

void BpeSegmenter::encode(std::string_view normalized, std::vector<Segment>& out) const {
  if (normalized.empty()) return;
  if (normalized.size() > UINT32_MAX / 2)
    throw Error("SentencePiece BPE: text of " + std::to_string(normalized.size()) +
                " normalised bytes is too long to encode");
  if (!split_words_ || !valid_utf8(normalized)) {
    encode_word(normalized, 0, out);
    return;
  }
  // Cut before every "▁" that follows another character; segment each word once.
  std::unordered_map<std::string_view, std::vector<Segment>> cache;
  std::vector<Segment> word_out;
  auto flush = [&](std::size_t begin, std::size_t end) {
    const std::string_view word = normalized.substr(begin, end - begin);
    auto it = cache.find(word);
    if (it == cache.end()) {
      word_out.clear();
      encode_word(word, 0, word_out);
      it = cache.emplace(word, word_out).first;
    }
    for (Segment s : it->second) {
      s.begin += static_cast<uint32_t>(begin);
      out.push_back(s);
    }
  };
  std::size_t start = 0;
  bool prev_space = false;
  for (std::size_t i = 0; i < normalized.size();) {
    std::size_t n = 0;
    utf8_valid_char(normalized.substr(i), &n);
    const bool space = normalized.compare(i, kSpaceSymbol.size(), kSpaceSymbol) == 0;
    if (space && !prev_space && i > start) {
      flush(start, i);
      start = i;
    }
    prev_space = space;
    i += n;
  }
  flush(start, normalized.size());
}

void BpeSegmenter::encode_word(std::string_view text, uint32_t base,
                               std::vector<Segment>& out) const {
  struct Symbol {
    int32_t prev, next;
    bool freeze;  // a user-defined piece: never merged
    uint32_t begin, length;  // length 0: merged away
  };
  struct Pair {
    int32_t left, right;
    float score;
    uint32_t size;
  };
  struct Worse {  // priority: higher score, then smaller left index
    bool operator()(const Pair& a, const Pair& b) const {
      return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
  };

  std::vector<Symbol> symbols;
  symbols.reserve(text.size());
  for (uint32_t pos = 0; pos < text.size();) {
    bool found = false;
    const auto n = static_cast<uint32_t>(vocab_.user_defined().match(text.substr(pos), &found));
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({index - 1, pos + n < text.size() ? index + 1 : -1, found, pos, n});
    pos += n;
  }
  if (symbols.empty()) return;

  std::priority_queue<Pair, std::vector<Pair>, Worse> agenda;
  // Merged UNUSED pieces -> the two pieces they came from (for resegmentation).
  std::unordered_map<std::string_view, std::pair<std::string_view, std::string_view>> rev_merge;

  auto piece_of = [&](const Symbol& s) { return text.substr(s.begin, s.length); };
  auto add_pair = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0 || symbols[left].freeze || symbols[right].freeze) return;
    const std::string_view piece =
        text.substr(symbols[left].begin, symbols[left].length + symbols[right].length);
    const int32_t id = vocab_.normal_id(piece);
    if (id < 0) return;
    agenda.push({left, right, vocab_.entry(id).score, static_cast<uint32_t>(piece.size())});
    if (vocab_.is(id, SentencePieceEntry::Type::Unused))
      rev_merge[piece] = {piece_of(symbols[left]), piece_of(symbols[right])};
  };

  for (std::size_t i = 1; i < symbols.size(); ++i)
    add_pair(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));

  while (!agenda.empty()) {
    const Pair top = agenda.top();
    agenda.pop();
    Symbol& l = symbols[top.left];
    Symbol& r = symbols[top.right];
    // Stale: one side merged away or grown since the pair was queued.
    if (l.length == 0 || r.length == 0 || l.length + r.length != top.size) continue;
    l.length += r.length;
    l.next = r.next;
    if (r.next >= 0) symbols[r.next].prev = top.left;
    r.length = 0;
    add_pair(l.prev, top.left);
    add_pair(top.left, l.next);
  }

  // Resegment merged UNUSED pieces into their parts (recursively; depth <= piece length).
  std::vector<std::string_view> stack;
  for (int32_t i = 0; i != -1; i = symbols[i].next) {
    stack.push_back(piece_of(symbols[i]));
    while (!stack.empty()) {
      const std::string_view w = stack.back();
      stack.pop_back();
      const int32_t id = vocab_.piece_to_id(w);
      if (vocab_.is(id, SentencePieceEntry::Type::Unused)) {
        const auto it = rev_merge.find(w);
        if (it != rev_merge.end()) {
          stack.push_back(it->second.second);  // right after left
          stack.push_back(it->second.first);
          continue;
        }
      }
      out.push_back({base + static_cast<uint32_t>(w.data() - text.data()),
                     static_cast<uint32_t>(w.size()), id});
    }
  }
}

}  // namespace poslens::spm
