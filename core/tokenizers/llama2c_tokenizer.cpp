// llama2.c tokenizer.bin reader, encoder and decoder. Semantics follow karpathy/llama2.c run.c
// (`build_tokenizer`, `encode`, `decode`); the merge loop is reorganised around a priority queue
// so long texts stay fast, with the same choice at every step (highest score, leftmost pair).
#include "core/tokenizers/llama2c_tokenizer.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <queue>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "core/base/error.h"
#include "core/base/little_endian.h"

namespace poslens {
namespace {

/// Largest tokenizer file read (real ones are a few hundred KiB).
constexpr uint64_t kMaxFileBytes = uint64_t{1} << 30;
/// run.c starts its best-score search at -1e10, so merges scoring at or below it never happen.
constexpr float kMinMergeScore = -1e10f;

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

/// The byte of a "<0xHH>" piece, or -1 for any other piece.
int byte_piece_value(const std::string& piece) {
  if (piece.size() != 6 || piece.compare(0, 3, "<0x") != 0 || piece[5] != '>') return -1;
  const int hi = hex_value(piece[3]), lo = hex_value(piece[4]);
  if (hi < 0 || lo < 0) return -1;
  return hi * 16 + lo;
}

}  // namespace

struct Llama2cTokenizer::Impl {
  std::string path;
  int32_t max_token_length = 0;
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::unordered_map<std::string, int32_t> lookup;  // piece -> first id holding it

  int32_t find(const std::string& piece) const {
    const auto it = lookup.find(piece);
    return it == lookup.end() ? -1 : it->second;
  }

  void check_id(int64_t id, const char* what) const {
    if (id < 0 || id >= static_cast<int64_t>(pieces.size())) {
      std::ostringstream s;
      s << path << ": " << what << ": token id " << id << " is outside the vocabulary [0, "
        << pieces.size() << ")";
      throw Error(s.str());
    }
  }
};

Llama2cTokenizer::Llama2cTokenizer(const std::string& path, int64_t vocab_size)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.path = path;
  if (vocab_size < 3) {
    std::ostringstream s;
    s << path << ": vocab_size=" << vocab_size
      << " is too small (a llama2.c vocabulary holds at least <unk>, BOS and EOS)";
    throw Error(s.str());
  }

  std::error_code ec;
  const auto fsize = std::filesystem::file_size(path, ec);
  if (ec) throw Error(path + ": cannot read tokenizer: " + ec.message());
  if (fsize > kMaxFileBytes) {
    std::ostringstream s;
    s << path << ": tokenizer file has " << fsize << " bytes, more than the limit " << kMaxFileBytes;
    throw Error(s.str());
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open tokenizer");
  std::vector<unsigned char> data(static_cast<std::size_t>(fsize));
  if (!data.empty() && !in.read(reinterpret_cast<char*>(data.data()),
                                static_cast<std::streamsize>(data.size())))
    throw Error(path + ": cannot read tokenizer");
  const std::size_t size = data.size();

  if (size < 4) {
    std::ostringstream s;
    s << path << ": tokenizer file has " << size
      << " bytes, too short for the int32 max_token_length";
    throw Error(s.str());
  }
  m.max_token_length = read_le_i32(data.data());
  if (m.max_token_length <= 0) {
    std::ostringstream s;
    s << path << ": max_token_length=" << m.max_token_length << " must be positive";
    throw Error(s.str());
  }

  // Every token takes at least 8 bytes, so the file size bounds what is reserved.
  const uint64_t fit = (size - 4) / 8;
  const auto reserve = static_cast<std::size_t>(
      std::min<uint64_t>(fit, static_cast<uint64_t>(vocab_size)));
  m.pieces.reserve(reserve);
  m.scores.reserve(reserve);
  m.lookup.reserve(reserve);

  std::size_t pos = 4;
  for (int64_t i = 0; i < vocab_size; ++i) {
    if (size - pos < 8) {
      std::ostringstream s;
      s << path << ": truncated at token " << i << " of " << vocab_size << " (offset " << pos
        << ": needs 8 bytes for score and length, file has " << size << " bytes)";
      throw Error(s.str());
    }
    const float score = read_le_f32(data.data() + pos);
    const int32_t len = read_le_i32(data.data() + pos + 4);
    pos += 8;
    if (len < 0) {
      std::ostringstream s;
      s << path << ": token " << i << " has negative length " << len << " (offset " << pos - 4
        << ")";
      throw Error(s.str());
    }
    if (len > m.max_token_length) {
      std::ostringstream s;
      s << path << ": token " << i << " has length " << len << ", more than max_token_length "
        << m.max_token_length << " (offset " << pos - 4 << ")";
      throw Error(s.str());
    }
    if (size - pos < static_cast<std::size_t>(len)) {
      std::ostringstream s;
      s << path << ": truncated at token " << i << " of " << vocab_size << " (offset " << pos
        << ": needs " << len << " bytes for its text, file has " << size << " bytes)";
      throw Error(s.str());
    }
    std::string piece(reinterpret_cast<const char*>(data.data() + pos),
                      static_cast<std::size_t>(len));
    pos += static_cast<std::size_t>(len);
    m.lookup.emplace(piece, static_cast<int32_t>(i));  // first occurrence wins
    m.pieces.push_back(std::move(piece));
    m.scores.push_back(score);
  }
  if (pos != size) {
    std::ostringstream s;
    s << path << ": " << (size - pos) << " extra bytes after token " << vocab_size - 1
      << " (offset " << pos << " of " << size << "; does vocab_size=" << vocab_size
      << " match this tokenizer?)";
    throw Error(s.str());
  }
}

Llama2cTokenizer::~Llama2cTokenizer() = default;

int64_t Llama2cTokenizer::vocab_size() const { return static_cast<int64_t>(impl_->pieces.size()); }

std::vector<int64_t> Llama2cTokenizer::encode(const std::string& text, bool add_bos) const {
  const Impl& m = *impl_;
  const auto vocab = static_cast<int64_t>(m.pieces.size());
  if (text.size() > static_cast<std::size_t>(std::numeric_limits<int32_t>::max() / 2))
    throw Error(m.path + ": text of " + std::to_string(text.size()) + " bytes is too long to encode");
  std::vector<int32_t> toks;
  toks.reserve(text.size() + 1);

  auto push_bytes = [&](const char* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      const int64_t id = static_cast<int64_t>(static_cast<unsigned char>(p[i])) + 3;
      if (id >= vocab) {
        std::ostringstream s;
        s << m.path << ": cannot encode byte 0x" << std::hex << (id - 3)
          << ": it has no piece and the vocabulary has no byte-fallback token for it";
        throw Error(s.str());
      }
      toks.push_back(static_cast<int32_t>(id));
    }
  };
  auto push_piece = [&](const char* p, std::size_t n) {
    const int32_t id = m.find(std::string(p, n));
    if (id >= 0)
      toks.push_back(id);
    else
      push_bytes(p, n);
  };

  // Dummy prefix (sentencepiece add_dummy_prefix): a " " token before non-empty text.
  if (!text.empty()) push_piece(" ", 1);

  // Split into UTF-8 code points the way run.c does: a byte plus the continuation bytes
  // (10xxxxxx) after it, at most 4 bytes. Invalid sequences simply fall back to bytes.
  for (std::size_t i = 0; i < text.size();) {
    std::size_t n = 1;
    while (n < 4 && i + n < text.size() &&
           (static_cast<unsigned char>(text[i + n]) & 0xC0) == 0x80)
      ++n;
    push_piece(text.data() + i, n);
    i += n;
  }

  // Greedy merges: at each step merge the adjacent pair whose concatenation is a piece with the
  // highest score (leftmost on ties), as run.c's loop does. Tokens form a linked list; the queue
  // holds candidate pairs, checked for staleness when popped.
  const std::size_t n = toks.size();
  if (n >= 2) {
    std::vector<int32_t> next(n), prev(n);
    std::vector<char> alive(n, 1);
    for (std::size_t i = 0; i < n; ++i) {
      next[i] = i + 1 < n ? static_cast<int32_t>(i + 1) : -1;
      prev[i] = static_cast<int32_t>(i) - 1;
    }
    struct Cand {
      float score;
      int32_t left, right;      // node indices
      int32_t ltok, rtok, merged;
    };
    struct Worse {
      bool operator()(const Cand& a, const Cand& b) const {
        if (a.score != b.score) return a.score < b.score;
        return a.left > b.left;  // leftmost first on equal scores
      }
    };
    std::priority_queue<Cand, std::vector<Cand>, Worse> queue;
    std::string buffer;
    auto consider = [&](int32_t left, int32_t right) {
      if (left < 0 || right < 0) return;
      buffer = m.pieces[toks[left]];
      buffer += m.pieces[toks[right]];
      const int32_t id = m.find(buffer);
      if (id < 0) return;
      const float score = m.scores[id];
      if (!(score > kMinMergeScore)) return;  // also drops NaN, like run.c's `>` test
      queue.push({score, left, right, toks[left], toks[right], id});
    };
    for (std::size_t i = 0; i + 1 < n; ++i)
      consider(static_cast<int32_t>(i), static_cast<int32_t>(i + 1));
    while (!queue.empty()) {
      const Cand c = queue.top();
      queue.pop();
      if (!alive[c.left] || !alive[c.right] || next[c.left] != c.right ||
          toks[c.left] != c.ltok || toks[c.right] != c.rtok)
        continue;  // stale: one side was merged away since
      toks[c.left] = c.merged;
      alive[c.right] = 0;
      next[c.left] = next[c.right];
      if (next[c.right] >= 0) prev[next[c.right]] = c.left;
      consider(prev[c.left], c.left);
      consider(c.left, next[c.left]);
    }
    std::vector<int32_t> merged;
    merged.reserve(n);
    for (int32_t i = 0; i >= 0; i = next[i]) merged.push_back(toks[i]);
    toks.swap(merged);
  }

  std::vector<int64_t> out;
  out.reserve(toks.size() + 1);
  if (add_bos) out.push_back(bos_id());
  out.insert(out.end(), toks.begin(), toks.end());
  return out;
}

std::string Llama2cTokenizer::token_text(int64_t id) const {
  impl_->check_id(id, "token_text");
  const std::string& piece = impl_->pieces[static_cast<std::size_t>(id)];
  const int byte = byte_piece_value(piece);
  if (byte >= 0) return std::string(1, static_cast<char>(byte));
  return piece;
}

std::string Llama2cTokenizer::decode(const std::vector<int64_t>& ids) const {
  const Impl& m = *impl_;
  std::string out;
  int64_t prev = -1;
  for (const int64_t id : ids) {
    m.check_id(id, "decode");
    if (id == bos_id() || id == eos_id()) {
      prev = id;
      continue;
    }
    const std::string& piece = m.pieces[static_cast<std::size_t>(id)];
    const int byte = byte_piece_value(piece);
    if (byte >= 0) {
      out.push_back(static_cast<char>(byte));
    } else if (prev == bos_id() && !piece.empty() && piece[0] == ' ') {
      out.append(piece, 1, std::string::npos);
    } else {
      out += piece;
    }
    prev = id;
  }
  return out;
}

}  // namespace poslens
