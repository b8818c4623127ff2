// tokenizer.json "decoder": HF tokenizers/src/decoders/{byte_fallback,fuse,strip,wordpiece,bpe,
// sequence}.rs, pre_tokenizers/{byte_level,metaspace}.rs and normalizers/replace.rs (Decoder).
#include "core/base/text.h"
#include "core/tokenizers/hf_components.h"
#include "core/tokenizers/hf_regex.h"

namespace poslens::hf {
namespace {

/// Invalid UTF-8 replaced by U+FFFD as Rust's String::from_utf8_lossy does (one per maximal
/// invalid prefix of a sequence).
std::string utf8_lossy(const std::string& bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    const auto b = static_cast<unsigned char>(bytes[i]);
    if (b < 0x80) { out += static_cast<char>(b); ++i; continue; }
    // Length of the longest valid prefix of a sequence starting here (Unicode "maximal subpart").
    size_t need = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) need = 1;
    else if (b == 0xE0) { need = 2; lo = 0xA0; }
    else if (b >= 0xE1 && b <= 0xEC) need = 2;
    else if (b == 0xED) { need = 2; hi = 0x9F; }
    else if (b >= 0xEE && b <= 0xEF) need = 2;
    else if (b == 0xF0) { need = 3; lo = 0x90; }
    else if (b >= 0xF1 && b <= 0xF3) need = 3;
    else if (b == 0xF4) { need = 3; hi = 0x8F; }
    if (need == 0) { out += "\xEF\xBF\xBD"; ++i; continue; }
    size_t k = 1;
    for (; k <= need && i + k < bytes.size(); ++k) {
      const auto c = static_cast<unsigned char>(bytes[i + k]);
      const unsigned char l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
      if (c < l || c > h) break;
    }
    if (k == need + 1) out.append(bytes, i, need + 1);
    else out += "\xEF\xBF\xBD";
    i += k == need + 1 ? need + 1 : k;
  }
  return out;
}

class SequenceDecoder : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> parts) : parts_(std::move(parts)) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens, bool alone) const override {
    for (const auto& p : parts_) tokens = p->decode_chain(std::move(tokens), alone);
    return tokens;
  }
  std::string name() const override {
    std::string s = "Sequence[";
    for (size_t i = 0; i < parts_.size(); ++i) s += (i ? ", " : "") + parts_[i]->name();
    return s + "]";
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

class ByteLevelDecoder : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens, bool alone) const override {
    std::string bytes;
    for (const auto& t : tokens) {
      std::string mapped;
      bool all = true;
      for (size_t i = 0; i < t.size() && all;) {
        size_t n;
        const int b = char_to_byte(next_char(t, i, &n));
        i += n;
        if (b < 0) all = false;
        else mapped += static_cast<char>(b);
      }
      bytes += all ? mapped : t;
    }
    return {alone ? bytes : utf8_lossy(bytes)};
  }
  std::string name() const override { return "ByteLevel"; }
};

class MetaspaceDecoder : public Decoder {
 public:
  MetaspaceDecoder(char32_t replacement, bool prepend) : prepend_(prepend) {
    append_utf8(replacement_, replacement);
  }
  std::vector<std::string> decode_chain(std::vector<std::string> tokens, bool alone) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      const std::string& t = tokens[i];
      const bool drop = i == 0 && prepend_ && !alone;
      for (size_t k = 0; k < t.size();) {
        if (t.compare(k, replacement_.size(), replacement_) == 0) {
          if (!drop) out += ' ';
          k += replacement_.size();
        } else {
          out += t[k++];
        }
      }
      tokens[i] = std::move(out);
    }
    return tokens;
  }
  std::string name() const override { return "Metaspace"; }

 private:
  std::string replacement_;
  bool prepend_;
};

class ByteFallbackDecoder : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens, bool alone) const override {
    std::vector<std::string> out;
    std::string pending;
    auto flush = [&] {
      if (pending.empty()) return;
      if (alone || invalid_utf8_at(pending) == std::string::npos) out.push_back(pending);
      else
        for (size_t k = 0; k < pending.size(); ++k) out.push_back("\xEF\xBF\xBD");
      pending.clear();
    };
    for (auto& t : tokens) {
      int byte = -1;
      if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>') {
        auto hex = [](char c) {
          return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        };
        const int hi = hex(t[3]), lo = hex(t[4]);
        if (hi >= 0 && lo >= 0) byte = hi * 16 + lo;
      }
      if (byte >= 0) {
        pending += static_cast<char>(byte);
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    return out;
  }
  std::string name() const override { return "ByteFallback"; }
};

class FuseDecoder : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens, bool) const override {
    std::string all;
    for (const auto& t : tokens) all += t;
    return {all};
  }
  std::string name() const override { return "Fuse"; }
};

class StripDecoder : public Decoder {
 public:
  StripDecoder(char32_t content, size_t start, size_t stop) : content_(content), start_(start), stop_(stop) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens, bool alone) const override {
    if (alone) return tokens;
    for (auto& t : tokens) {
      std::vector<char32_t> chars;
      for (size_t k = 0; k < t.size();) {
        size_t n;
        chars.push_back(next_char(t, k, &n));
        k += n;
      }
      size_t start_cut = 0;
      for (size_t i = 0; i < start_ && i < chars.size(); ++i) {
        if (chars[i] != content_) break;
        start_cut = i + 1;
      }
      size_t stop_cut = chars.size();
      for (size_t i = 0; i < stop_ && i < chars.size(); ++i) {
        const size_t index = chars.size() - i - 1;
        if (chars[index] != content_) break;
        stop_cut = index;
      }
      std::string out;
      for (size_t i = start_cut; i < stop_cut; ++i) append_utf8(out, chars[i]);
      t = std::move(out);
    }
    return tokens;
  }
  std::string name() const override { return "Strip"; }

 private:
  char32_t content_;
  size_t start_, stop_;
};

class ReplaceDecoder : public Decoder {
 public:
  ReplaceDecoder(const std::string& pattern, std::string content, const std::string& where)
      : regex_(pattern, where), content_(std::move(content)) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens, bool) const override {
    for (auto& t : tokens) {
      std::string out;
      for (const auto& [range, is_match] : regex_.find_matches(t))
        out += is_match ? content_ : t.substr(range.first, range.second - range.first);
      t = std::move(out);
    }
    return tokens;
  }
  std::string name() const override { return "Replace"; }

 private:
  Regex regex_;
  std::string content_;
};

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  std::string out;
  size_t at = 0;
  for (size_t hit; (hit = s.find(from, at)) != std::string::npos; at = hit + from.size())
    out.append(s, at, hit - at).append(to);
  out.append(s, at, std::string::npos);
  s = std::move(out);
}

class WordPieceDecoder : public Decoder {
 public:
  WordPieceDecoder(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens, bool alone) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (i != 0 || alone) {
        if (t.compare(0, prefix_.size(), prefix_) == 0) t.erase(0, prefix_.size());
        else t = " " + t;
      }
      if (cleanup_) {
        static const char* pairs[][2] = {{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","},
                                         {" ' ", "'"}, {" n't", "n't"}, {" 'm", "'m"},
                                         {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"},
                                         {" 're", "'re"}};
        for (const auto& p : pairs) replace_all(t, p[0], p[1]);
      }
    }
    return tokens;
  }
  std::string name() const override { return "WordPiece"; }

 private:
  std::string prefix_;
  bool cleanup_;
};

class BpeDecoder : public Decoder {
 public:
  explicit BpeDecoder(std::string suffix) : suffix_(std::move(suffix)) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens, bool alone) const override {
    for (size_t i = 0; i < tokens.size(); ++i)
      if (!suffix_.empty())
        replace_all(tokens[i], suffix_, i + 1 == tokens.size() && !alone ? "" : " ");
    return tokens;
  }
  std::string name() const override { return "BPEDecoder"; }

 private:
  std::string suffix_;
};

}  // namespace

std::unique_ptr<Decoder> read_decoder(const Field& field) {
  const std::string type = field["type"].string();
  if (type == "Sequence") {
    const Field list = field["decoders"];
    std::vector<std::unique_ptr<Decoder>> parts;
    for (size_t i = 0; i < list.array_size(); ++i) parts.push_back(read_decoder(list.at(i)));
    return std::make_unique<SequenceDecoder>(std::move(parts));
  }
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "Metaspace") {
    std::string scheme = field.string_or("prepend_scheme", "always");
    if (field.has("add_prefix_space") && !field["add_prefix_space"].boolean()) scheme = "never";
    if (scheme != "first" && scheme != "always" && scheme != "never")
      field["prepend_scheme"].fail("must be first, always or never, got " + poslens::quoted(scheme));
    return std::make_unique<MetaspaceDecoder>(field["replacement"].character(), scheme != "never");
  }
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") {
    const int64_t start = field.int_or("start", 0), stop = field.int_or("stop", 0);
    if (start < 0 || stop < 0 || start > 1'000'000 || stop > 1'000'000)
      field.fail("start and stop must be small non-negative counts");
    return std::make_unique<StripDecoder>(field["content"].character(), static_cast<size_t>(start),
                                          static_cast<size_t>(stop));
  }
  if (type == "Replace")
    return std::make_unique<ReplaceDecoder>(read_pattern(field["pattern"]), field["content"].string(),
                                            field.file() + ": " + field.path() + " (Replace)");
  if (type == "WordPiece")
    return std::make_unique<WordPieceDecoder>(field.string_or("prefix", "##"),
                                              field.bool_or("cleanup", true));
  if (type == "BPEDecoder") return std::make_unique<BpeDecoder>(field.string_or("suffix", "</w>"));
  field["type"].fail("decoder type " + poslens::quoted(type) + " is not supported");
}

}  // namespace poslens::hf
