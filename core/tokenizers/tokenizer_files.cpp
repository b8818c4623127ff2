#include "core/tokenizers/tokenizer_files.h"

#include <filesystem>

#include "core/base/error.h"
#include "core/tokenizers/hf_tokenizer.h"
#include "core/tokenizers/llama2c_tokenizer.h"
#include "core/tokenizers/sentencepiece_tokenizer.h"
#include "core/tokenizers/vocab_tokenizer.h"

namespace poslens {
namespace fs = std::filesystem;
namespace {

/// A SentencePiece model with transformers' add_bos_token / add_eos_token from
/// tokenizer_config.json (LlamaTokenizer's defaults, BOS yes and EOS no, when it is absent).
class SentencePieceWithConfig : public Tokenizer {
 public:
  SentencePieceWithConfig(std::unique_ptr<SentencePieceTokenizer> inner, const TokenizerConfig& config)
      : inner_(std::move(inner)),
        add_bos_(config.has_add_bos_token ? config.add_bos_token : true),
        add_eos_(config.present && config.add_eos_token) {}

  std::vector<int64_t> encode(const std::string& text, bool add_special) const override {
    auto ids = inner_->encode(text, add_special && add_bos_);
    if (add_special && add_eos_ && inner_->eos_id() >= 0) ids.push_back(inner_->eos_id());
    return ids;
  }
  Encoding encode_full(const std::string& text, bool add_special) const override {
    auto out = inner_->encode_full(text, add_special && add_bos_);
    if (add_special && add_eos_ && inner_->eos_id() >= 0) {
      out.ids.push_back(inner_->eos_id());
      out.tokens.push_back(inner_->piece(inner_->eos_id()));
      if (!out.offsets.empty()) out.offsets.emplace_back(0, 0);
    }
    return out;
  }
  std::string piece(int64_t id) const override { return inner_->piece(id); }
  std::string token_text(int64_t id) const override { return inner_->token_text(id); }
  std::string decode(const std::vector<int64_t>& ids) const override { return inner_->decode(ids); }
  int64_t vocab_size() const override { return inner_->vocab_size(); }
  int64_t bos_id() const override { return inner_->bos_id(); }
  int64_t eos_id() const override { return inner_->eos_id(); }
  std::vector<int64_t> special_ids() const override { return inner_->special_ids(); }
  std::string describe() const override { return inner_->describe(); }

 private:
  std::unique_ptr<SentencePieceTokenizer> inner_;
  bool add_bos_, add_eos_;
};

/// Task vocabularies are far smaller than this (a character set, a few hundred words).
constexpr uintmax_t kTaskVocabularyBytes = 256 * 1024;

/// N of a llama2.c "tok<N>.bin" (the vocabulary size it was written for), or -1.
int64_t llama2c_vocab_from_name(const std::string& name) {
  if (name.size() < 8 || name.rfind("tok", 0) != 0 || name.compare(name.size() - 4, 4, ".bin") != 0)
    return -1;
  const std::string digits = name.substr(3, name.size() - 7);
  if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos)
    return -1;
  return std::stoll(digits);
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

}  // namespace

std::unique_ptr<Tokenizer> read_tokenizer(const std::string& path_text, int64_t vocab_size) {
  const fs::path path(path_text);
  if (!is_file(path)) throw Error(path_text + ": no such tokenizer file");
  const std::string name = path.filename().string();
  const std::string ext = path.extension().string();
  if (name == "vocab.json") {
    const fs::path merges = path.parent_path() / "merges.txt";
    if (!is_file(merges))
      throw Error(path_text + ": a GPT-2 vocab.json needs merges.txt beside it (" +
                  merges.string() + " not found)");
    return std::make_unique<HfTokenizer>(HfTokenizer::from_gpt2_files(path_text, merges.string()));
  }
  if (ext == ".json") {
    // PosLens's own task vocabularies (a subset of tokenizer.json, a few KB) keep their own
    // class: the trainer's tasks check a checkpoint's vocabulary through it. Larger files go
    // straight to the full reader instead of being parsed twice.
    std::error_code ec;
    if (fs::file_size(path, ec) < kTaskVocabularyBytes && !ec) {
      try {
        return std::make_unique<VocabTokenizer>(VocabTokenizer::read(path_text));
      } catch (const Error&) {  // not the subset: read it in full below
      }
    }
    return std::make_unique<HfTokenizer>(HfTokenizer::read(path_text));
  }
  if (ext == ".model") {
    const auto config = read_tokenizer_config((path.parent_path() / "tokenizer_config.json").string());
    return std::make_unique<SentencePieceWithConfig>(SentencePieceTokenizer::read(path_text), config);
  }
  if (vocab_size <= 0) vocab_size = llama2c_vocab_from_name(name);
  if (vocab_size <= 0)
    throw Error(path_text + ": a llama2.c tokenizer.bin does not store its vocabulary size; "
                            "open it with its model (or name a tokenizer.json / tokenizer.model)");
  return std::make_unique<Llama2cTokenizer>(path_text, vocab_size);
}

std::string find_tokenizer_file(const std::string& dir_text, int64_t vocab_size) {
  const fs::path dir(dir_text);
  for (const char* name : {"tokenizer.json", "tokenizer.model"})
    if (is_file(dir / name)) return (dir / name).string();
  if (is_file(dir / "vocab.json") && is_file(dir / "merges.txt")) return (dir / "vocab.json").string();
  if (is_file(dir / "tokenizer.bin")) return (dir / "tokenizer.bin").string();
  if (vocab_size > 0) {
    const fs::path tok = dir / ("tok" + std::to_string(vocab_size) + ".bin");
    if (is_file(tok)) return tok.string();
    return {};
  }
  std::error_code ec;  // vocabulary size unknown: any tok<N>.bin
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_regular_file(ec) && llama2c_vocab_from_name(entry.path().filename().string()) > 0)
      return entry.path().string();
  return {};
}

std::string resolve_tokenizer_path(const std::string& path_text) {
  const fs::path path(path_text);
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error(path_text + ": no such file or folder");
  const std::string name = path.filename().string();
  const bool tokenizer_file = name == "vocab.json" || path.extension() == ".model" ||
                              (path.extension() == ".json" && name != "config.json") ||
                              name == "tokenizer.bin" || llama2c_vocab_from_name(name) > 0;
  if (is_file(path) && tokenizer_file) return path_text;
  const fs::path dir = fs::is_directory(path, ec) ? path : path.parent_path();
  const auto found = find_tokenizer_file(dir.string());
  if (found.empty())
    throw Error(path_text + ": no tokenizer found (looked for tokenizer.json, tokenizer.model, "
                            "vocab.json + merges.txt, tokenizer.bin in " + dir.string() + ")");
  return found;
}

}  // namespace poslens
