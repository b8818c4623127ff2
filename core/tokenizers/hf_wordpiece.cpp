#include "core/tokenizers/hf_wordpiece.h"

#include <algorithm>

#include "core/base/error.h"
#include "core/base/text.h"

namespace poslens::hf {

WordPieceModel::WordPieceModel(HfVocab vocab, std::string unk_token,
                               std::string continuing_subword_prefix,
                               uint64_t max_input_chars_per_word, const std::string& where)
    : vocab_(std::move(vocab)), prefix_(std::move(continuing_subword_prefix)),
      max_chars_(max_input_chars_per_word) {
  for (const auto& entry : vocab_.by_token()) longest_piece_ = std::max(longest_piece_, entry.first.size());
  const auto it = vocab_.by_token().find(unk_token);
  if (it == vocab_.by_token().end())
    throw Error(where + ": model.unk_token " + poslens::quoted(unk_token) +
                " is not in model.vocab (WordPiece gives it to every word it cannot split)");
  unk_id_ = it->second;
}

void WordPieceModel::tokenize(std::string_view word, std::vector<ModelToken>& out) const {
  const auto whole = static_cast<uint32_t>(word.size());
  uint64_t chars = 0;
  for (unsigned char b : word) chars += (b & 0xC0) != 0x80;
  if (chars > max_chars_) {
    out.push_back({unk_id_, 0, whole});
    return;
  }
  const size_t first = out.size();
  std::string candidate;
  for (size_t start = 0; start < word.size();) {
    // HF tries every end from the word's end down; a candidate longer than the longest piece
    // cannot match, so the search starts at the last character boundary within that length.
    size_t end = word.size();
    if (end - start > longest_piece_) {
      end = start + longest_piece_;
      while (end > start && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80) --end;
    }
    bool found = false;
    while (start < end) {
      candidate.clear();
      if (start > 0) candidate += prefix_;
      candidate.append(word.data() + start, end - start);
      const auto it = vocab_.by_token().find(candidate);
      if (it != vocab_.by_token().end()) {
        out.push_back({it->second, static_cast<uint32_t>(start), static_cast<uint32_t>(end)});
        found = true;
        break;
      }
      do --end;  // back by one character
      while (end > start && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80);
    }
    if (!found) {  // the whole word is unknown
      out.resize(first);
      out.push_back({unk_id_, 0, whole});
      return;
    }
    start = end;
  }
}

int64_t WordPieceModel::token_to_id(const std::string& token) const {
  return vocab_.id(token);
}

const std::string* WordPieceModel::id_to_token(int64_t id) const {
  return vocab_.token(id);
}

}  // namespace poslens::hf
