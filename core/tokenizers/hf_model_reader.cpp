// tokenizer.json "model": BPE, WordLevel, WordPiece and Unigram (HF models/{bpe,wordlevel,
// wordpiece,unigram}/serialization.rs), with the limits of an untrusted file.
#include "core/base/text.h"
#include "core/tokenizers/hf_bpe.h"
#include "core/tokenizers/hf_unigram.h"
#include "core/tokenizers/hf_wordpiece.h"

namespace poslens::hf {
namespace {

/// model.vocab {"piece": id}. Ids are HF's u32; gaps and shared ids load, as in HF.
HfVocab read_vocab(const Field& field) {
  field.require_object();
  const auto& j = field.json();
  if (j.size() > static_cast<size_t>(kMaxVocabulary))
    field.fail(std::to_string(j.size()) + " entries, more than the limit of " +
               std::to_string(kMaxVocabulary));
  std::unordered_map<std::string, uint32_t> by_token;
  by_token.reserve(j.size());
  for (auto it = j.begin(); it != j.end(); ++it) {
    const Field id_field(it.value(), field.path() + "[" + poslens::quoted(it.key()) + "]",
                         std::make_shared<const std::string>(field.file()));
    const int64_t id = id_field.integer();
    if (id < 0 || id > int64_t{UINT32_MAX})
      id_field.fail("id " + std::to_string(id) + " is outside 0.." + std::to_string(UINT32_MAX) +
                    " (HF's ids are unsigned 32-bit)");
    by_token.emplace(it.key(), static_cast<uint32_t>(id));
  }
  return HfVocab(std::move(by_token));
}

std::vector<std::pair<std::string, std::string>> read_merges(const Field& field) {
  std::vector<std::pair<std::string, std::string>> merges;
  const size_t n = field.array_size();
  merges.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const Field m = field.at(i);
    if (m.json().is_string()) {
      const std::string line = m.string();
      const size_t space = line.find(' ');
      if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos)
        m.fail("must be two tokens separated by one space, got " + poslens::quoted(line));
      merges.emplace_back(line.substr(0, space), line.substr(space + 1));
    } else if (m.json().is_array() && m.json().size() == 2) {
      merges.emplace_back(m.at(0).string(), m.at(1).string());
    } else {
      m.fail("must be \"a b\" or [\"a\", \"b\"]");
    }
  }
  return merges;
}

/// Unigram's model.vocab [["piece", score], ...] in id order.
std::vector<std::pair<std::string, double>> read_scored_vocab(const Field& field) {
  const size_t n = field.array_size();
  std::vector<std::pair<std::string, double>> vocab;
  vocab.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const Field entry = field.at(i);
    if (!entry.json().is_array() || entry.json().size() != 2)
      entry.fail("must be [\"piece\", score]");
    vocab.emplace_back(entry.at(0).string(), serde_json_f64(entry.at(1).number()));
  }
  return vocab;
}

}  // namespace

std::unique_ptr<Model> read_model(const Field& field) {
  const std::string type = field.string_or("type", field.has("merges") ? "BPE" : "");
  const std::string where = field.file();
  if (type == "BPE") {
    if (field.has("dropout") && field["dropout"].number() != 0.0)
      field["dropout"].fail("BPE dropout is random; PosLens needs reproducible ids (null or 0)");
    BpeOptions options;
    options.unk_token = field.string_or("unk_token", "");
    options.continuing_subword_prefix = field.string_or("continuing_subword_prefix", "");
    options.end_of_word_suffix = field.string_or("end_of_word_suffix", "");
    options.fuse_unk = field.bool_or("fuse_unk", false);
    options.byte_fallback = field.bool_or("byte_fallback", false);
    options.ignore_merges = field.bool_or("ignore_merges", false);
    return std::make_unique<BpeModel>(read_vocab(field["vocab"]), read_merges(field["merges"]),
                                      std::move(options), where);
  }
  if (type == "WordLevel")
    return std::make_unique<WordLevelModel>(read_vocab(field["vocab"]),
                                            field.string_or("unk_token", "<unk>"), where);
  if (type == "WordPiece") {
    const int64_t max_chars = field.int_or("max_input_chars_per_word", 100);
    if (max_chars < 0) field["max_input_chars_per_word"].fail("must not be negative");
    return std::make_unique<WordPieceModel>(
        read_vocab(field["vocab"]), field.string_or("unk_token", "[UNK]"),
        field.string_or("continuing_subword_prefix", "##"), static_cast<uint64_t>(max_chars),
        where);
  }
  if (type == "Unigram") {
    int64_t unk_id = -1;
    if (field.has("unk_id")) {
      unk_id = field["unk_id"].integer();
      if (unk_id < 0) field["unk_id"].fail("must be null or an id, got " + std::to_string(unk_id));
    }
    return std::make_unique<UnigramModel>(read_scored_vocab(field["vocab"]), unk_id,
                                          field.bool_or("byte_fallback", false), where);
  }
  field["type"].fail("model type " + poslens::quoted(type) +
                     " is not supported (PosLens reads BPE, WordLevel, WordPiece and Unigram)");
}

}  // namespace poslens::hf
