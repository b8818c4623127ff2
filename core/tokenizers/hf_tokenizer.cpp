#include "core/tokenizers/hf_tokenizer.h"

#include <algorithm>
#include <filesystem>

#include "core/base/error.h"
#include "core/base/text.h"
#include "core/base/untrusted_json.h"
#include "core/tokenizers/hf_added_vocabulary.h"
#include "core/tokenizers/hf_components.h"
#include "core/tokenizers/hf_text.h"

namespace poslens {

using hf::Field;

namespace {

/// A token name in tokenizer_config.json: "<s>", {"content": "<s>", ...} or null.
std::string config_token(const Field& f) {
  if (f.is_null()) return "";
  if (f.json().is_string()) return f.string();
  if (f.json().is_object()) return f["content"].string();
  f.fail("must be a token string or {\"content\": ...}");
}

std::vector<hf::AddedToken> read_added_tokens(const Field& list) {
  std::vector<hf::AddedToken> tokens;
  const size_t n = list.array_size();
  for (size_t i = 0; i < n; ++i) {
    const Field f = list.at(i);
    hf::AddedToken t;
    t.content = f["content"].string();
    if (f.has("id")) {
      const int64_t id = f["id"].integer();
      if (id < 0 || id >= hf::kMaxVocabulary)
        f["id"].fail("id " + std::to_string(id) + " is outside 0.." +
                     std::to_string(hf::kMaxVocabulary - 1));
    }
    t.single_word = f.bool_or("single_word", false);
    t.lstrip = f.bool_or("lstrip", false);
    t.rstrip = f.bool_or("rstrip", false);
    t.special = f.bool_or("special", false);
    t.normalized = f.bool_or("normalized", !t.special);
    tokens.push_back(std::move(t));
  }
  return tokens;
}

}  // namespace

TokenizerConfig read_tokenizer_config(const std::string& path) {
  TokenizerConfig config;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return config;
  const std::string text = read_small_file(path, hf::kMaxTokenizerFileBytes);
  const auto j = hf::parse_tokenizer_json(text, path);
  const Field root(j, "", std::make_shared<const std::string>(path));
  root.require_object();
  config.present = true;
  config.bos_token = config_token(root.optional("bos_token"));
  config.eos_token = config_token(root.optional("eos_token"));
  config.add_bos_token = root.bool_or("add_bos_token", false);
  config.has_add_bos_token = root.has("add_bos_token");
  config.add_eos_token = root.bool_or("add_eos_token", false);
  return config;
}

HfTokenizer::HfTokenizer() : added_(std::make_unique<hf::AddedVocabulary>()) {}
HfTokenizer::HfTokenizer(HfTokenizer&&) noexcept = default;
HfTokenizer& HfTokenizer::operator=(HfTokenizer&&) noexcept = default;
HfTokenizer::~HfTokenizer() = default;

HfTokenizer HfTokenizer::read(const std::string& path) {
  const std::string text = read_small_file(path, hf::kMaxTokenizerFileBytes);
  const auto config_path = std::filesystem::path(path).parent_path() / "tokenizer_config.json";
  return from_json(text, path, read_tokenizer_config(config_path.string()));
}

HfTokenizer HfTokenizer::from_json(const std::string& json_text, const std::string& where,
                                   const TokenizerConfig& config) {
  const auto j = hf::parse_tokenizer_json(json_text, where);
  const Field root(j, "", std::make_shared<const std::string>(where));
  root.require_object();
  for (const char* key : {"truncation", "padding"})
    if (root.has(key))
      root[key].fail("is set; PosLens encodes whole texts (set it to null)");
  HfTokenizer t;
  t.source_ = where;
  t.model_ = hf::read_model(root["model"]);
  if (root.has("normalizer")) t.normalizer_ = hf::read_normalizer(root["normalizer"]);
  if (root.has("pre_tokenizer")) t.pre_tokenizer_ = hf::read_pre_tokenizer(root["pre_tokenizer"]);
  if (root.has("decoder")) t.decoder_ = hf::read_decoder(root["decoder"]);
  if (root.has("added_tokens"))
    t.added_->add(read_added_tokens(root["added_tokens"]), *t.model_, t.normalizer_.get());
  t.vocab_size_ = std::max(t.model_->id_end(), t.added_->max_id() + 1);
  if (root.has("post_processor"))
    t.post_processor_ = hf::read_post_processor(root["post_processor"], t.vocab_size_);
  t.finish(config, where);
  return t;
}

void HfTokenizer::finish(const TokenizerConfig& config, const std::string& where) {
  std::vector<int64_t> before, after;
  if (post_processor_) post_processor_->special_ids(before, after);
  bos_ = before.empty() ? -1 : before.front();
  eos_ = after.empty() ? -1 : after.back();
  auto named = [&](const std::string& name, const char* role) -> int64_t {
    if (name.empty()) return -1;
    const int64_t id = id_of(name);
    if (id < 0)
      throw Error(where + ": tokenizer_config.json's " + role + " " + poslens::quoted(name) +
                  " is not a token of the tokenizer");
    return id;
  };
  if (bos_ < 0) bos_ = named(config.bos_token, "bos_token");
  if (eos_ < 0) eos_ = named(config.eos_token, "eos_token");
  // Neither file says: the usual names of special tokens (GPT-2's <|endoftext|> is both).
  auto special_named = [&](std::initializer_list<const char*> names) -> int64_t {
    for (const char* n : names)
      if (added_->is_special(n)) return added_->id_of(n);
    return -1;
  };
  if (bos_ < 0) bos_ = special_named({"<s>", "<|begin_of_text|>", "<bos>", "<|endoftext|>", "[CLS]"});
  if (eos_ < 0) eos_ = special_named({"</s>", "<|end_of_text|>", "<eos>", "<|endoftext|>", "[SEP]"});
  config_adds_bos_ = !post_processor_ && config.add_bos_token && bos_ >= 0;
  config_adds_eos_ = !post_processor_ && config.add_eos_token && eos_ >= 0;
}

HfTokenizer HfTokenizer::from_gpt2_files(const std::string& vocab_json,
                                         const std::string& merges_txt) {
  const auto vocab = hf::parse_tokenizer_json(read_small_file(vocab_json, hf::kMaxTokenizerFileBytes),
                                              vocab_json);
  const std::string merges_text = read_small_file(merges_txt, hf::kMaxTokenizerFileBytes);
  nlohmann::json merges = nlohmann::json::array();
  size_t line_number = 0;
  for (size_t at = 0; at < merges_text.size();) {
    size_t end = merges_text.find('\n', at);
    if (end == std::string::npos) end = merges_text.size();
    std::string line = merges_text.substr(at, end - at);
    at = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line.rfind("#version", 0) == 0) continue;
    if (const size_t bad = hf::invalid_utf8_at(line); bad != std::string::npos)
      throw Error(merges_txt + ": line " + std::to_string(line_number) + " is not UTF-8 (byte " +
                  std::to_string(bad + 1) + ")");
    const size_t space = line.find(' ');
    if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos)
      throw Error(merges_txt + ": line " + std::to_string(line_number) +
                  " is not two tokens separated by one space");
    merges.push_back({line.substr(0, space), line.substr(space + 1)});
  }
  const nlohmann::json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false},
                                     {"trim_offsets", true}, {"use_regex", true}};
  nlohmann::json j = {
      {"version", "1.0"},
      {"added_tokens",
       {{{"id", 50256}, {"content", "<|endoftext|>"}, {"single_word", false}, {"lstrip", false},
         {"rstrip", false}, {"normalized", true}, {"special", true}}}},
      {"normalizer", nullptr},
      {"pre_tokenizer", byte_level},
      {"post_processor", byte_level},
      {"decoder", byte_level},
      {"model",
       {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr},
        {"continuing_subword_prefix", ""}, {"end_of_word_suffix", ""}, {"fuse_unk", false},
        {"byte_fallback", false}, {"vocab", vocab}, {"merges", merges}}}};
  TokenizerConfig config;
  config.bos_token = config.eos_token = "<|endoftext|>";
  HfTokenizer t = from_json(j.dump(), vocab_json + " + " + merges_txt, config);
  return t;
}

int64_t HfTokenizer::id_of(const std::string& piece) const {
  const int64_t id = added_->id_of(piece);
  return id >= 0 ? id : model_->token_to_id(piece);
}

void HfTokenizer::encode_parts(const std::string& text, bool add_special,
                               hf::EncodingParts& out) const {
  const size_t bad = hf::invalid_utf8_at(text);
  if (bad != std::string::npos)
    throw Error("text is not valid UTF-8 (at byte " + std::to_string(bad) + ")");
  if (text.size() >= 0xFFFFFFFFu) throw Error("text is too long to tokenize (4 GiB or more)");
  out.input = &text;
  auto pieces = added_->extract_and_normalize(text, normalizer_.get());
  if (pre_tokenizer_) pre_tokenizer_->pre_tokenize(pieces);
  std::vector<hf::ModelToken> found;
  for (const auto& piece : pieces) {
    if (piece.has_tokens) {
      for (const auto& token : piece.tokens) {
        out.ids.push_back(token.id);
        if (!out.details) continue;
        out.tokens.push_back(token.value);
        out.offsets.push_back(piece.text.to_original(token.start, token.end));
      }
      continue;
    }
    found.clear();
    model_->tokenize(piece.text.text, found);
    for (const auto& token : found) {
      out.ids.push_back(token.id);
      if (!out.details) continue;
      if (token.raw) {
        out.tokens.push_back(piece.text.text.substr(token.start, token.end - token.start));
      } else {
        const std::string* value = model_->id_to_token(token.id);
        out.tokens.push_back(value ? *value : std::string());
      }
      out.offsets.push_back(piece.text.to_original(token.start, token.end));
    }
  }
  if (post_processor_) {
    post_processor_->process(out, add_special);
  } else if (add_special) {
    auto add = [&](bool front, int64_t id) {
      out.ids.insert(front ? out.ids.begin() : out.ids.end(), id);
      if (!out.details) return;
      out.tokens.insert(front ? out.tokens.begin() : out.tokens.end(), piece(id));
      out.offsets.insert(front ? out.offsets.begin() : out.offsets.end(), hf::Span{0, 0});
    };
    if (config_adds_bos_) add(true, bos_);
    if (config_adds_eos_) add(false, eos_);
  }
}

std::vector<int64_t> HfTokenizer::encode(const std::string& text, bool add_bos) const {
  hf::EncodingParts parts;
  parts.details = false;
  encode_parts(text, add_bos, parts);
  return std::move(parts.ids);
}

Encoding HfTokenizer::encode_full(const std::string& text, bool add_special) const {
  hf::EncodingParts parts;
  encode_parts(text, add_special, parts);
  Encoding out;
  out.ids = std::move(parts.ids);
  out.tokens = std::move(parts.tokens);
  out.offsets.reserve(parts.offsets.size());
  for (const auto& o : parts.offsets) out.offsets.emplace_back(o.start, o.end);
  return out;
}

std::string HfTokenizer::piece(int64_t id) const {
  if (id < 0 || id >= vocab_size_)
    throw Error("token id " + std::to_string(id) + " is outside the vocabulary (" +
                std::to_string(vocab_size_) + " tokens)");
  if (const auto* t = added_->token(id)) return t->pattern;
  const std::string* p = model_->id_to_token(id);
  if (p == nullptr) throw Error("token id " + std::to_string(id) + " has no piece");
  return *p;
}

std::string HfTokenizer::token_text(int64_t id) const {
  const std::string p = piece(id);
  if (const auto* t = added_->token(id)) return t->content;
  if (!decoder_) return p;
  std::string out;
  for (const auto& s : decoder_->decode_chain({p}, /*alone=*/true)) out += s;
  return out;
}

std::string HfTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (const int64_t id : ids) {
    if (id < 0 || id >= vocab_size_)
      throw Error("token id " + std::to_string(id) + " is outside the vocabulary (" +
                  std::to_string(vocab_size_) + " tokens)");
    const std::string* value = nullptr;
    if (const auto* t = added_->token(id)) value = &t->pattern;
    else value = model_->id_to_token(id);
    if (value == nullptr || added_->is_special(*value)) continue;
    tokens.push_back(*value);
  }
  if (decoder_) {
    std::string out;
    for (const auto& s : decoder_->decode_chain(std::move(tokens), false)) out += s;
    return out;
  }
  std::string out;
  for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
  return out;
}

std::vector<int64_t> HfTokenizer::special_ids() const {
  std::vector<int64_t> ids;
  for (const auto& [id, t] : added_->by_id())
    if (t.special) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::string HfTokenizer::describe() const {
  std::string s = "HF tokenizer.json, " + model_->name() + ", " + std::to_string(vocab_size_) +
                  " tokens";
  if (normalizer_) s += "; normalizer " + normalizer_->name();
  if (pre_tokenizer_) s += "; pre-tokenizer " + pre_tokenizer_->name();
  if (post_processor_) s += "; post-processor " + post_processor_->name();
  if (decoder_) s += "; decoder " + decoder_->name();
  return s;
}

}  // namespace poslens
