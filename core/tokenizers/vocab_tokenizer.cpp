#include "core/tokenizers/vocab_tokenizer.h"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "core/base/text.h"
#include "core/base/untrusted_json.h"

namespace poslens {
namespace {

/// A tokenizer.json of a task vocabulary is a few kB; 16 MB leaves room for big vocabularies.
constexpr std::uint64_t kMaxTokenizerJsonBytes = 16'000'000;

bool is_special(const std::string& piece) {
  return piece.size() > 2 && piece.front() == '<' && piece.back() == '>';
}

bool has_space(const std::string& piece) {
  return std::any_of(piece.begin(), piece.end(),
                     [](unsigned char c) { return std::isspace(c) != 0; });
}

/// Length of the UTF-8 sequence starting at text[i], or 0 when it is not a valid one.
size_t sequence_length(const std::string& text, size_t i) {
  const auto lead = static_cast<unsigned char>(text[i]);
  const size_t n = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3
                                   : (lead >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return 0;
  return n;
}

}  // namespace

std::vector<std::string> utf8_code_points(const std::string& text) {
  std::vector<std::string> out;
  for (size_t i = 0; i < text.size();) {
    const size_t n = std::max<size_t>(1, sequence_length(text, i));
    out.push_back(text.substr(i, n));
    i += n;
  }
  return out;
}

VocabTokenizer::VocabTokenizer(Unit unit, std::vector<std::string> pieces, const std::string& bos,
                               const std::string& unk)
    : unit_(unit), pieces_(std::move(pieces)) {
  for (size_t id = 0; id < pieces_.size(); ++id) {
    const auto& piece = pieces_[id];
    if (piece.empty()) throw Error("tokenizer: piece " + std::to_string(id) + " is empty");
    if (!ids_.emplace(piece, static_cast<int64_t>(id)).second)
      throw Error("tokenizer: piece " + quoted(piece) + " appears twice");
    if (is_special(piece)) {
      special_ids_.push_back(static_cast<int64_t>(id));
    } else if (unit_ == Unit::Character && utf8_code_points(piece).size() != 1) {
      throw Error("tokenizer: character vocabulary piece " + quoted(piece) +
                  " is not one character");
    } else if (unit_ == Unit::Word && has_space(piece)) {
      throw Error("tokenizer: word vocabulary piece " + quoted(piece) + " contains whitespace");
    }
  }
  std::stable_sort(special_ids_.begin(), special_ids_.end(), [&](int64_t a, int64_t b) {
    return pieces_[a].size() > pieces_[b].size();
  });
  auto special = [&](const std::string& name, const char* role) -> int64_t {
    if (name.empty()) return -1;
    const auto id = id_of(name);
    if (id < 0 || !is_special(name))
      throw Error(std::string("tokenizer: ") + role + " token " + quoted(name) +
                  " is not a special piece of the vocabulary");
    return id;
  };
  bos_ = special(bos, "BOS");
  unk_ = special(unk, "unknown");
}

int64_t VocabTokenizer::id_of(const std::string& piece) const {
  const auto it = ids_.find(piece);
  return it == ids_.end() ? -1 : it->second;
}


std::vector<int64_t> VocabTokenizer::encode(const std::string& text, bool add_bos) const {
  std::vector<int64_t> ids;
  if (add_bos && bos_ >= 0) ids.push_back(bos_);
  std::string word;
  auto end_word = [&] {
    if (word.empty()) return;
    const auto id = id_of(word);
    if (id >= 0 && !is_special(word)) ids.push_back(id);
    else if (unk_ >= 0) ids.push_back(unk_);
    word.clear();
  };
  for (size_t i = 0; i < text.size();) {
    const auto match = std::find_if(special_ids_.begin(), special_ids_.end(), [&](int64_t id) {
      return text.compare(i, pieces_[id].size(), pieces_[id]) == 0;
    });
    if (match != special_ids_.end()) {  // HF matches added tokens before pre-tokenizing
      end_word();
      ids.push_back(*match);
      i += pieces_[*match].size();
      continue;
    }
    const size_t n = std::max<size_t>(1, sequence_length(text, i));
    const std::string unit_text = text.substr(i, n);
    if (unit_ == Unit::Character) {
      const auto id = sequence_length(text, i) > 0 ? id_of(unit_text) : -1;
      if (id >= 0) ids.push_back(id);
      else if (unk_ >= 0) ids.push_back(unk_);  // without an unknown token HF drops the unit
    } else if (n == 1 && std::isspace(static_cast<unsigned char>(text[i]))) {
      end_word();
    } else {
      word += unit_text;
    }
    i += n;
  }
  end_word();
  return ids;
}

std::string VocabTokenizer::token_text(int64_t id) const {
  if (id < 0 || id >= vocab_size())
    throw Error("token id " + std::to_string(id) + " is outside the vocabulary (" +
                std::to_string(vocab_size()) + " tokens)");
  return pieces_[static_cast<size_t>(id)];
}

std::string VocabTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  for (const auto id : ids) {
    const std::string piece = token_text(id);
    if (is_special(piece) && id != unk_) continue;
    if (unit_ == Unit::Word && !out.empty()) out += ' ';
    out += piece;
  }
  return out;
}

std::string VocabTokenizer::to_json() const {
  using nlohmann::ordered_json;
  ordered_json added = ordered_json::array();
  for (size_t id = 0; id < pieces_.size(); ++id)
    if (is_special(pieces_[id]))
      added.push_back({{"id", id}, {"content", pieces_[id]}, {"single_word", false},
                       {"lstrip", false}, {"rstrip", false}, {"normalized", false},
                       {"special", true}});
  ordered_json vocab = ordered_json::object();
  for (size_t id = 0; id < pieces_.size(); ++id) vocab[pieces_[id]] = id;
  const ordered_json unk = unk_ >= 0 ? ordered_json(pieces_[unk_]) : ordered_json(nullptr);

  ordered_json j;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  j["added_tokens"] = added;
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] =
      unit_ == Unit::Word ? ordered_json{{"type", "WhitespaceSplit"}} : ordered_json(nullptr);
  if (bos_ >= 0) {
    const auto& b = pieces_[bos_];
    auto token = [&](const char* kind, const char* id) {
      return ordered_json{{kind, {{"id", id}, {"type_id", 0}}}};
    };
    j["post_processor"] = {
        {"type", "TemplateProcessing"},
        {"single", {token("SpecialToken", b.c_str()), token("Sequence", "A")}},
        {"pair", {token("SpecialToken", b.c_str()), token("Sequence", "A"),
                  token("SpecialToken", b.c_str()), token("Sequence", "B")}},
        {"special_tokens", {{b, {{"id", b}, {"ids", {bos_}}, {"tokens", {b}}}}}}};
  } else {
    j["post_processor"] = nullptr;
  }
  j["decoder"] = unit_ == Unit::Character ? ordered_json{{"type", "Fuse"}} : ordered_json(nullptr);
  if (unit_ == Unit::Character) {
    j["model"] = {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", unk},
                  {"continuing_subword_prefix", nullptr}, {"end_of_word_suffix", nullptr},
                  {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", false},
                  {"vocab", vocab}, {"merges", ordered_json::array()}};
  } else {
    j["model"] = {{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", unk}};
  }
  return j.dump(2);
}

VocabTokenizer VocabTokenizer::read(const std::string& path) {
  const auto j = read_json_file(path, "tokenizer.json", kMaxTokenizerJsonBytes);
  const std::string where = path;
  auto fail = [&](const std::string& what) -> Error {
    return Error(where + ": " + what +
                 " (PosLens reads only its own task tokenizers from tokenizer.json so far: a "
                 "BPE without merges or a WordLevel model)");
  };
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object())
    throw fail("no \"model\" object");
  const auto& model = j["model"];
  const std::string type = model.value("type", "");
  Unit unit;
  if (type == "BPE") {
    if (!model.contains("merges") || !model["merges"].is_array() || !model["merges"].empty())
      throw fail("model.merges is not an empty list");
    if (model.value("byte_fallback", false)) throw fail("model.byte_fallback is set");
    unit = Unit::Character;
  } else if (type == "WordLevel") {
    unit = Unit::Word;
  } else {
    throw fail("model.type " + quoted(type) + " is not supported");
  }
  for (const char* key : {"normalizer", "truncation", "padding"})
    if (j.contains(key) && !j[key].is_null()) throw fail(std::string("\"") + key + "\" is set");
  const auto& pre = j.contains("pre_tokenizer") ? j["pre_tokenizer"] : nlohmann::json();
  const bool whitespace_split = pre.is_object() && pre.value("type", "") == "WhitespaceSplit";
  if (unit == Unit::Character ? !pre.is_null() : !whitespace_split)
    throw fail("pre_tokenizer " + pre.dump() + " does not fit a " + type + " task vocabulary");

  if (!model.contains("vocab") || !model["vocab"].is_object()) throw fail("no model.vocab object");
  const auto& vocab = model["vocab"];
  std::vector<std::string> pieces(vocab.size());
  for (const auto& [piece, id] : vocab.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
        id.get<int64_t>() >= static_cast<int64_t>(pieces.size()) || !pieces[id.get<size_t>()].empty())
      throw fail("model.vocab ids are not 0..n-1 once each (at " + quoted(piece) + ")");
    pieces[id.get<size_t>()] = piece;
  }
  const std::string unk =
      model.contains("unk_token") && model["unk_token"].is_string() ? model["unk_token"].get<std::string>() : "";
  std::string bos;
  if (j.contains("post_processor") && j["post_processor"].is_object()) {
    const auto& post = j["post_processor"];
    if (post.value("type", "") != "TemplateProcessing" || !post.contains("single") ||
        !post["single"].is_array() || post["single"].size() != 2 ||
        !post["single"][0].contains("SpecialToken"))
      throw fail("post_processor is not a TemplateProcessing \"<bos> $A\"");
    bos = post["single"][0]["SpecialToken"].value("id", "");
  }
  try {
    return VocabTokenizer(unit, std::move(pieces), bos, unk);
  } catch (const Error& e) {
    throw Error(where + ": " + e.what());
  }
}

}  // namespace poslens
