// tokenizer.json "post_processor": HF tokenizers/src/processors/{template,bert,roberta,
// sequence}.rs and pre_tokenizers/byte_level.rs (PostProcessor). Single sequences only.
#include "core/base/text.h"
#include "core/tokenizers/hf_components.h"

namespace poslens::hf {

void trim_offsets(EncodingParts& e, bool add_prefix_space) {
  if (!e.details || e.input == nullptr) return;
  const char32_t space = byte_to_char()[' '];
  for (size_t i = 0; i < e.tokens.size() && i < e.offsets.size(); ++i) {
    const std::string& token = e.tokens[i];
    std::vector<char32_t> chars;
    for (size_t k = 0; k < token.size();) {
      size_t n;
      chars.push_back(next_char(token, k, &n));
      k += n;
    }
    auto is_space = [&](char32_t c) { return c == space || is_whitespace(c); };
    size_t leading = 0, trailing = 0;
    while (leading < chars.size() && is_space(chars[leading])) ++leading;
    while (trailing < chars.size() && is_space(chars[chars.size() - 1 - trailing])) ++trailing;
    if (leading == 0 && trailing == 0) continue;
    // HF trims offsets counted in characters of the input (the node binding's char offsets).
    Span& o = e.offsets[i];
    const std::string& in = *e.input;
    if (leading > 0) {
      const bool first = i == 0 || o.start == 0;
      if (first && add_prefix_space && leading == 1) leading = 0;
      uint32_t start = o.start;
      for (size_t k = 0; k < leading && start < in.size(); ++k)
        start += static_cast<uint32_t>(char_length(static_cast<unsigned char>(in[start])));
      o.start = std::min(start, o.end);
    }
    if (trailing > 0) {
      uint32_t end = o.end;
      size_t k = 0;
      for (; k < trailing && end > 0; ++k) {
        --end;
        while (end > 0 && (static_cast<unsigned char>(in[end]) & 0xC0) == 0x80) --end;
      }
      if (k == trailing) o.end = std::max(end, o.start);  // HF: only when end >= trailing
    }
  }
}

namespace {

void add_tokens(EncodingParts& e, bool front, const std::vector<int64_t>& ids,
                const std::vector<std::string>& tokens) {
  e.ids.insert(front ? e.ids.begin() : e.ids.end(), ids.begin(), ids.end());
  if (!e.details) return;
  e.tokens.insert(front ? e.tokens.begin() : e.tokens.end(), tokens.begin(), tokens.end());
  e.offsets.insert(front ? e.offsets.begin() : e.offsets.end(), ids.size(), Span{0, 0});
}

class ByteLevelProcessor : public PostProcessor {
 public:
  ByteLevelProcessor(bool trim, bool add_prefix_space) : trim_(trim), add_prefix_space_(add_prefix_space) {}
  void process(EncodingParts& e, bool) const override {
    if (trim_) trim_offsets(e, add_prefix_space_);
  }
  std::string name() const override { return "ByteLevel"; }

 private:
  bool trim_, add_prefix_space_;
};

/// TemplateProcessing's single template: special tokens before and after sequence A.
/// (RobertaProcessing and BertProcessing are the template "<cls> $A <sep>".)
class TemplateProcessor : public PostProcessor {
 public:
  struct Special {
    std::vector<int64_t> ids;
    std::vector<std::string> tokens;
  };
  TemplateProcessor(std::vector<Special> before, std::vector<Special> after, std::string name,
                    bool trim = false, bool add_prefix_space = false)
      : before_(std::move(before)), after_(std::move(after)), name_(std::move(name)),
        trim_(trim), add_prefix_space_(add_prefix_space) {}
  void process(EncodingParts& e, bool add_special) const override {
    if (trim_) trim_offsets(e, add_prefix_space_);
    if (!add_special) return;
    for (auto it = before_.rbegin(); it != before_.rend(); ++it) add_tokens(e, true, it->ids, it->tokens);
    for (const auto& s : after_) add_tokens(e, false, s.ids, s.tokens);
  }
  void special_ids(std::vector<int64_t>& before, std::vector<int64_t>& after) const override {
    for (const auto& s : before_) before.insert(before.end(), s.ids.begin(), s.ids.end());
    for (const auto& s : after_) after.insert(after.end(), s.ids.begin(), s.ids.end());
  }
  std::string name() const override { return name_; }

 private:
  std::vector<Special> before_, after_;
  std::string name_;
  bool trim_, add_prefix_space_;
};

class SequenceProcessor : public PostProcessor {
 public:
  explicit SequenceProcessor(std::vector<std::unique_ptr<PostProcessor>> parts) : parts_(std::move(parts)) {}
  void process(EncodingParts& e, bool add_special) const override {
    for (const auto& p : parts_) p->process(e, add_special);
  }
  void special_ids(std::vector<int64_t>& before, std::vector<int64_t>& after) const override {
    for (const auto& p : parts_) p->special_ids(before, after);
  }
  std::string name() const override {
    std::string s = "Sequence[";
    for (size_t i = 0; i < parts_.size(); ++i) s += (i ? ", " : "") + parts_[i]->name();
    return s + "]";
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> parts_;
};

int64_t checked_id(const Field& f, int64_t vocab_size) {
  const int64_t id = f.integer();
  if (id < 0 || id >= vocab_size)
    f.fail("token id " + std::to_string(id) + " is outside the vocabulary (" +
           std::to_string(vocab_size) + " tokens)");
  return id;
}

/// ["<s>", 0] of RobertaProcessing / BertProcessing.
TemplateProcessor::Special read_pair(const Field& f, int64_t vocab_size) {
  if (!f.json().is_array() || f.json().size() != 2) f.fail("must be [\"token\", id]");
  return {{checked_id(f.at(1), vocab_size)}, {f.at(0).string()}};
}

}  // namespace

std::unique_ptr<PostProcessor> read_post_processor(const Field& field, int64_t vocab_size) {
  const std::string type = field["type"].string();
  if (type == "ByteLevel")
    return std::make_unique<ByteLevelProcessor>(field.bool_or("trim_offsets", true),
                                                field.bool_or("add_prefix_space", true));
  if (type == "Sequence") {
    const Field list = field["processors"];
    std::vector<std::unique_ptr<PostProcessor>> parts;
    for (size_t i = 0; i < list.array_size(); ++i)
      parts.push_back(read_post_processor(list.at(i), vocab_size));
    return std::make_unique<SequenceProcessor>(std::move(parts));
  }
  if (type == "RobertaProcessing")
    return std::make_unique<TemplateProcessor>(
        std::vector<TemplateProcessor::Special>{read_pair(field["cls"], vocab_size)},
        std::vector<TemplateProcessor::Special>{read_pair(field["sep"], vocab_size)}, type,
        field.bool_or("trim_offsets", true), field.bool_or("add_prefix_space", true));
  if (type == "BertProcessing")
    return std::make_unique<TemplateProcessor>(
        std::vector<TemplateProcessor::Special>{read_pair(field["cls"], vocab_size)},
        std::vector<TemplateProcessor::Special>{read_pair(field["sep"], vocab_size)}, type);
  if (type == "TemplateProcessing") {
    const Field specials = field["special_tokens"];
    specials.require_object();
    const Field single = field["single"];
    std::vector<TemplateProcessor::Special> before, after;
    bool seen_a = false;
    for (size_t i = 0; i < single.array_size(); ++i) {
      const Field piece = single.at(i);
      piece.require_object();
      if (piece.has("Sequence")) {
        const std::string id = piece["Sequence"]["id"].string();
        if (id != "A" || seen_a)
          piece.fail("a single-sequence template holds sequence A once (got " + poslens::quoted(id) + ")");
        seen_a = true;
      } else if (piece.has("SpecialToken")) {
        const Field name = piece["SpecialToken"]["id"];
        const std::string key = name.string();
        if (!specials.json().contains(key))
          name.fail("special token " + poslens::quoted(key) + " is not in special_tokens");
        const Field entry = specials[key.c_str()];
        const Field ids = entry["ids"], tokens = entry["tokens"];
        TemplateProcessor::Special s;
        for (size_t k = 0; k < ids.array_size(); ++k) s.ids.push_back(checked_id(ids.at(k), vocab_size));
        for (size_t k = 0; k < tokens.array_size(); ++k) s.tokens.push_back(tokens.at(k).string());
        if (s.ids.size() != s.tokens.size()) entry.fail("ids and tokens differ in length");
        (seen_a ? after : before).push_back(std::move(s));
      } else {
        piece.fail("must be {\"Sequence\": ...} or {\"SpecialToken\": ...}");
      }
    }
    if (!seen_a) single.fail("has no sequence A");
    return std::make_unique<TemplateProcessor>(std::move(before), std::move(after), type);
  }
  field["type"].fail("post-processor type " + poslens::quoted(type) + " is not supported");
}

}  // namespace poslens::hf
