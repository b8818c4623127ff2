// tokenizer.json "pre_tokenizer": HF tokenizers/src/pre_tokenizers/{byte_level,split,metaspace,
// digits,whitespace,punctuation,bert,sequence}.rs.
#include "core/base/text.h"
#include "core/tokenizers/hf_components.h"
#include "core/tokenizers/hf_regex.h"

namespace poslens::hf {
namespace {

/// HF PreTokenizedString::split: `f` cuts each piece without tokens; empty results are dropped.
template <class F>
void split_pieces(std::vector<Piece>& pieces, F&& f) {
  std::vector<Piece> out;
  out.reserve(pieces.size());
  for (auto& piece : pieces) {
    if (piece.has_tokens) {
      out.push_back(std::move(piece));
      continue;
    }
    for (auto& part : f(std::move(piece.text))) {
      if (part.empty()) continue;
      Piece p;
      p.text = std::move(part);
      out.push_back(std::move(p));
    }
  }
  pieces = std::move(out);
}

class SequencePreTokenizer : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> parts)
      : parts_(std::move(parts)) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    for (const auto& p : parts_) p->pre_tokenize(pieces);
  }
  std::string name() const override {
    std::string s = "Sequence[";
    for (size_t i = 0; i < parts_.size(); ++i) s += (i ? ", " : "") + parts_[i]->name();
    return s + "]";
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class ByteLevelPreTokenizer : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex)
      : add_prefix_space_(add_prefix_space), use_regex_(use_regex),
        regex_(kGpt2Pattern, "GPT-2 pattern") {
    const auto& table = byte_to_char();
    for (int b = 0; b < 256; ++b) {
      std::string s;
      append_utf8(s, table[static_cast<size_t>(b)]);
      mapped_[static_cast<size_t>(b)] = s;
    }
  }
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    std::vector<std::pair<size_t, size_t>> matches;
    std::vector<Piece> out;
    out.reserve(pieces.size() * 4);
    auto emit = [&](NormalizedText&& part) {
      if (part.empty()) return;
      Piece p;
      p.text = std::move(part);
      map_bytes(p.text);
      out.push_back(std::move(p));
    };
    for (auto& piece : pieces) {
      if (piece.has_tokens) {
        out.push_back(std::move(piece));
        continue;
      }
      NormalizedText& text = piece.text;
      if (add_prefix_space_ && !text.empty() && text.text[0] != ' ') text.prepend(" ");
      if (!use_regex_) {
        emit(std::move(text));
        continue;
      }
      // Isolated split on the GPT-2 pattern: matches and the text between them, in order.
      regex_.find_all(text.text, matches);
      size_t prev = 0;
      for (const auto& [s, e] : matches) {
        if (prev != s) emit(text.slice(prev, s));
        emit(text.slice(s, e));
        prev = e;
      }
      if (prev != text.text.size()) emit(text.slice(prev, text.text.size()));
    }
    pieces = std::move(out);
  }
  std::string name() const override { return "ByteLevel"; }

 private:
  /// Each byte becomes its ByteLevel character, aligned with the character it belongs to (HF:
  /// the first byte replaces the character, the others are inserted after it).
  void map_bytes(NormalizedText& text) const {
    std::string mapped;
    std::vector<Span> align;
    mapped.reserve(text.text.size() * 2);
    align.reserve(text.text.size() * 2);
    for (size_t i = 0; i < text.text.size(); ++i) {
      const std::string& m = mapped_[static_cast<unsigned char>(text.text[i])];
      mapped += m;
      align.insert(align.end(), m.size(), text.align[i]);
    }
    text.text = std::move(mapped);
    text.align = std::move(align);
  }

  bool add_prefix_space_, use_regex_;
  Regex regex_;
  std::array<std::string, 256> mapped_;
};

class SplitPreTokenizer : public PreTokenizer {
 public:
  SplitPreTokenizer(const std::string& pattern, SplitBehavior behavior, bool invert,
                    const std::string& where)
      : regex_(pattern, where), behavior_(behavior), invert_(invert) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    split_pieces(pieces, [&](NormalizedText&& text) {
      auto matches = regex_.find_matches(text.text);
      if (invert_)
        for (auto& m : matches) m.second = !m.second;
      return text.split(matches, behavior_);
    });
  }
  std::string name() const override { return "Split"; }

 private:
  Regex regex_;
  SplitBehavior behavior_;
  bool invert_;
};

/// Splits on characters that satisfy a predicate (Digits, WhitespaceSplit, Punctuation).
template <class Predicate>
class CharSplitPreTokenizer : public PreTokenizer {
 public:
  CharSplitPreTokenizer(Predicate predicate, SplitBehavior behavior, std::string name)
      : predicate_(predicate), behavior_(behavior), name_(std::move(name)) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    split_pieces(pieces, [&](NormalizedText&& text) {
      return text.split(find_char_matches(text.text, predicate_), behavior_);
    });
  }
  std::string name() const override { return name_; }

 private:
  Predicate predicate_;
  SplitBehavior behavior_;
  std::string name_;
};

template <class Predicate>
std::unique_ptr<PreTokenizer> char_split(Predicate p, SplitBehavior b, const char* name) {
  return std::make_unique<CharSplitPreTokenizer<Predicate>>(p, b, name);
}

/// HF Whitespace: the complement of `\w+|[^\w\s]+`, removed.
class WhitespacePreTokenizer : public PreTokenizer {
 public:
  WhitespacePreTokenizer() : regex_(R"(\w+|[^\w\s]+)", "Whitespace pattern") {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    split_pieces(pieces, [&](NormalizedText&& text) {
      auto matches = regex_.find_matches(text.text);
      for (auto& m : matches) m.second = !m.second;
      return text.split(matches, SplitBehavior::Removed);
    });
  }
  std::string name() const override { return "Whitespace"; }

 private:
  Regex regex_;
};

class MetaspacePreTokenizer : public PreTokenizer {
 public:
  enum class Prepend { First, Never, Always };
  MetaspacePreTokenizer(char32_t replacement, Prepend scheme, bool split)
      : replacement_(replacement), scheme_(scheme), split_(split) {
    append_utf8(replacement_text_, replacement);
  }
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    split_pieces(pieces, [&](NormalizedText&& text) {
      text.replace(find_char_matches(text.text, [](char32_t c) { return c == U' '; }),
                   replacement_text_);
      const bool starts = text.text.compare(0, replacement_text_.size(), replacement_text_) == 0;
      if (scheme_ == Prepend::Always && !starts) text.prepend(replacement_text_);
      if (scheme_ == Prepend::First && !starts && text.original.start == 0)
        text.prepend(replacement_text_);
      if (!split_) return std::vector<NormalizedText>{std::move(text)};
      const char32_t r = replacement_;
      return text.split(find_char_matches(text.text, [r](char32_t c) { return c == r; }),
                        SplitBehavior::MergedWithNext);
    });
  }
  std::string name() const override { return "Metaspace"; }

 private:
  char32_t replacement_;
  std::string replacement_text_;
  Prepend scheme_;
  bool split_;
};

}  // namespace

const std::array<char32_t, 256>& byte_to_char() {
  static const std::array<char32_t, 256> table = [] {
    std::array<char32_t, 256> t{};
    auto printable = [](int b) {
      return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    char32_t n = 0;
    for (int b = 0; b < 256; ++b)
      t[static_cast<size_t>(b)] = printable(b) ? static_cast<char32_t>(b) : 256 + n++;
    return t;
  }();
  return table;
}

int char_to_byte(char32_t c) {
  static const std::array<int, 512> table = [] {
    std::array<int, 512> t{};
    t.fill(-1);
    const auto& forward = byte_to_char();
    for (int b = 0; b < 256; ++b) t[forward[static_cast<size_t>(b)]] = b;
    return t;
  }();
  return c < 512 ? table[c] : -1;
}

SplitBehavior read_behavior(const Field& field) {
  const std::string b = field.string();
  if (b == "Removed") return SplitBehavior::Removed;
  if (b == "Isolated") return SplitBehavior::Isolated;
  if (b == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::MergedWithNext;
  if (b == "Contiguous") return SplitBehavior::Contiguous;
  field.fail("must be Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous, got " +
             poslens::quoted(b));
}

std::unique_ptr<PreTokenizer> read_pre_tokenizer(const Field& field) {
  const std::string type = field["type"].string();
  if (type == "Sequence") {
    const Field list = field["pretokenizers"];
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    for (size_t i = 0; i < list.array_size(); ++i) parts.push_back(read_pre_tokenizer(list.at(i)));
    return std::make_unique<SequencePreTokenizer>(std::move(parts));
  }
  if (type == "ByteLevel")
    return std::make_unique<ByteLevelPreTokenizer>(field.bool_or("add_prefix_space", true),
                                                   field.bool_or("use_regex", true));
  if (type == "Split")
    return std::make_unique<SplitPreTokenizer>(read_pattern(field["pattern"]),
                                               read_behavior(field["behavior"]),
                                               field["invert"].boolean(),
                                               field.file() + ": " + field.path() + " (Split)");
  if (type == "Metaspace") {
    const char32_t replacement = field["replacement"].character();
    std::string scheme = field.string_or("prepend_scheme", "always");
    if (field.has("add_prefix_space") && !field["add_prefix_space"].boolean()) {
      if (field.has("prepend_scheme") && scheme != "never")
        field.fail("add_prefix_space does not match declared prepend_scheme");
      scheme = "never";
    }
    MetaspacePreTokenizer::Prepend p;
    if (scheme == "first") p = MetaspacePreTokenizer::Prepend::First;
    else if (scheme == "never") p = MetaspacePreTokenizer::Prepend::Never;
    else if (scheme == "always") p = MetaspacePreTokenizer::Prepend::Always;
    else field["prepend_scheme"].fail("must be first, always or never, got " + poslens::quoted(scheme));
    return std::make_unique<MetaspacePreTokenizer>(replacement, p, field.bool_or("split", true));
  }
  if (type == "Digits")
    return char_split(is_numeric,
                      field.bool_or("individual_digits", false) ? SplitBehavior::Isolated
                                                                : SplitBehavior::Contiguous,
                      "Digits");
  if (type == "WhitespaceSplit") return char_split(is_whitespace, SplitBehavior::Removed, "WhitespaceSplit");
  if (type == "Whitespace") return std::make_unique<WhitespacePreTokenizer>();
  if (type == "Punctuation")
    return char_split(is_punctuation,
                      field.has("behavior") ? read_behavior(field["behavior"]) : SplitBehavior::Isolated,
                      "Punctuation");
  if (type == "BertPreTokenizer") {
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    parts.push_back(char_split(is_whitespace, SplitBehavior::Removed, "WhitespaceSplit"));
    parts.push_back(char_split(is_punctuation, SplitBehavior::Isolated, "Punctuation"));
    return std::make_unique<SequencePreTokenizer>(std::move(parts));
  }
  field["type"].fail("pre-tokenizer type " + poslens::quoted(type) + " is not supported");
}

}  // namespace poslens::hf
