// Language modelling on a text corpus. The corpus is a file, or a folder whose regular files
// without an extension are read in name order (Debian's fortunes package:
// /usr/share/games/fortunes, the default). Blocks are separated by a line "%" (the fortune
// format; a text without such lines is one block); every 10th block is held out for testing.
// Vocabulary: by default characters — <bos>, <unk>, then every character (UTF-8 code point)
// seen at least min_count times in the training blocks; with option tokenizer=FILE, that HF
// tokenizer.json (e.g. a byte-level BPE trained on the corpus, tools/train_bpe_tokenizer.py),
// which must have a BOS token, and each block is encoded alone. A sequence is <bos> followed by
// a window of L-1 tokens from a uniformly drawn offset. Scored: every prediction. Splits: test
// (held-out blocks, length L) and long (held-out blocks, length 2L: extrapolation beyond the
// training length).
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

#include "core/base/error.h"
#include "core/base/text.h"
#include "core/base/untrusted_json.h"
#include "core/tokenizers/tokenizer_files.h"
#include "core/train/task_support.h"

namespace poslens::train {
namespace {
namespace fs = std::filesystem;

constexpr const char* kDefaultCorpus = "/usr/share/games/fortunes";
constexpr std::uint64_t kMaxCorpusBytes = 1'000'000'000;
constexpr const char* kBlockSeparator = "\n%\n";
constexpr std::uint64_t kMaxTokenizerBytes = 64u << 20;

std::string read_corpus(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw Error("task text: corpus " + path + " does not exist" +
                (path == kDefaultCorpus ? " (install Debian's fortunes package, or pass "
                                          "--task-option corpus=FILE)"
                                        : ""));
  if (!fs::is_directory(path, ec)) return read_small_file(path, kMaxCorpusBytes);
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(path))
    if (entry.is_regular_file() && !entry.path().has_extension()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::string text;
  for (const auto& file : files) {
    text += read_small_file(file.string(), kMaxCorpusBytes);
    if (!text.empty() && text.back() != '\n') text += '\n';
    text += "%\n";  // a file boundary is a block boundary
    if (text.size() > kMaxCorpusBytes) throw Error("task text: corpus " + path + " exceeds 1 GB");
  }
  if (text.empty()) throw Error("task text: corpus folder " + path + " has no files without an extension");
  return text;
}

/// Training and held-out text: blocks separated by "\n%\n", every 10th held out.
std::pair<std::string, std::string> split_blocks(const std::string& text) {
  std::string train, test;
  size_t start = 0, index = 0;
  while (start < text.size()) {
    size_t end = text.find(kBlockSeparator, start);
    const size_t next = end == std::string::npos ? text.size() : end + 3;
    if (end == std::string::npos) end = text.size();
    std::string& into = index % 10 == 9 ? test : train;
    into.append(text, start, end - start);
    into += kBlockSeparator;
    start = next;
    ++index;
  }
  return {train, test};
}

VocabTokenizer corpus_vocabulary(const std::string& train, int64_t min_count) {
  std::map<std::string, int64_t> counts;
  for (const auto& ch : utf8_code_points(train)) ++counts[ch];
  std::vector<std::string> pieces{"<bos>", "<unk>"};
  for (const auto& [ch, count] : counts)
    if (count >= min_count && (ch.size() > 1 || static_cast<unsigned char>(ch[0]) < 0x80))
      pieces.push_back(ch);  // a lone byte >= 0x80 is invalid UTF-8: left to <unk>
  return VocabTokenizer(VocabTokenizer::Unit::Character, pieces, "<bos>", "<unk>");
}

/// The held-out or training text as token ids, block by block: a subword tokenizer must not
/// merge across a block boundary (the separator lines are not text), so each block is encoded
/// alone and the blocks' ids are joined with the encoding of the newline between them.
std::vector<int64_t> encode_blocks(const Tokenizer& tokenizer, const std::string& text) {
  std::vector<int64_t> ids;
  const auto newline = tokenizer.encode("\n", false);
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(kBlockSeparator, start);
    if (end == std::string::npos) end = text.size();
    const auto block = tokenizer.encode(text.substr(start, end - start), false);
    ids.insert(ids.end(), block.begin(), block.end());
    ids.insert(ids.end(), newline.begin(), newline.end());
    start = end + 3;
  }
  return ids;
}

/// Throws unless `model` (a trained model's tokenizer) has the tokens of `task`'s, id for id.
void check_same_tokens(const Tokenizer& task, const Tokenizer* model, const std::string& file) {
  if (!model) return;
  bool same = model->vocab_size() == task.vocab_size();
  for (int64_t id = 0; same && id < task.vocab_size(); ++id) same = model->token_text(id) == task.token_text(id);
  if (!same)
    throw Error("task text: the model's tokenizer (" + std::to_string(model->vocab_size()) +
                " tokens) is not " + file + " (" + std::to_string(task.vocab_size()) + " tokens)");
}

class TextCorpus : public Task {
 public:
  TextCorpus(const TaskSpec& spec, const Tokenizer* model) {
    TaskOptions options(spec);
    length_ = spec.length > 0 ? spec.length : 256;
    if (length_ < 2 || length_ > 1'000'000)
      throw Error("task text: the length must be at least 2, got " + std::to_string(length_));
    const std::string corpus = options.text("corpus", kDefaultCorpus);
    const int64_t min_count = options.integer("min_count", 20, 1, 1'000'000'000);
    const std::string tokenizer_file = options.text("tokenizer", "");
    options_ = options.finish();

    const auto [train, test] = split_blocks(read_corpus(corpus));
    if (!tokenizer_file.empty()) {
      if (fs::path(tokenizer_file).extension() != ".json")
        throw Error("task text: option tokenizer=" + tokenizer_file + " is not an HF tokenizer.json file");
      json_ = read_small_file(tokenizer_file, kMaxTokenizerBytes);
      tokenizer_ = read_tokenizer(tokenizer_file);
      if (tokenizer_->bos_id() < 0)
        throw Error("task text: tokenizer " + tokenizer_file +
                    " has no BOS token (a special added token <bos>, <s> or <|endoftext|>)");
      check_same_tokens(*tokenizer_, model, tokenizer_file);
      train_ = encode_blocks(*tokenizer_, train);
      test_ = encode_blocks(*tokenizer_, test);
    } else {
      const auto* vocab = dynamic_cast<const VocabTokenizer*>(model);
      if (model && (!vocab || vocab->unit() != VocabTokenizer::Unit::Character || vocab->bos_id() < 0))
        throw Error("task text: the model's tokenizer is not a character vocabulary with <bos>");
      auto chars = std::make_unique<VocabTokenizer>(vocab ? *vocab : corpus_vocabulary(train, min_count));
      json_ = chars->to_json();
      tokenizer_ = std::move(chars);
      train_ = tokenizer_->encode(train, false);
      test_ = tokenizer_->encode(test, false);
    }
    if (static_cast<int64_t>(test_.size()) < 2 * length_ ||
        static_cast<int64_t>(train_.size()) < length_)
      throw Error("task text: corpus " + corpus + " is too short for sequences of " +
                  std::to_string(2 * length_) + " tokens (" + std::to_string(train_.size()) +
                  " training, " + std::to_string(test_.size()) + " held-out tokens)");
  }

  TaskSpec spec() const override { return {"text", length_, options_}; }
  const Tokenizer& tokenizer() const override { return *tokenizer_; }
  std::string tokenizer_json() const override { return json_; }
  int64_t length() const override { return length_; }
  std::vector<std::string> splits() const override { return {"test", "long"}; }
  std::string describe(const std::string& split) const override {
    std::ostringstream out;
    out << (split == "train" ? "training" : "held-out") << " blocks of "
        << options_.at("corpus") << ", " << length_of(split) << " tokens";
    return out.str();
  }
  LossMode default_loss() const override { return LossMode::All; }

  TaskBatch sample(const std::string& split, int64_t n, std::mt19937_64& rng) const override {
    const int64_t T = length_of(split);
    const auto& ids = split == "train" ? train_ : test_;
    std::uniform_int_distribution<size_t> offset(0, ids.size() - static_cast<size_t>(T - 1));
    std::vector<TaskRow> rows(static_cast<size_t>(n));
    for (auto& row : rows) {
      const size_t start = offset(rng);
      row.tokens.push_back(tokenizer_->bos_id());
      row.tokens.insert(row.tokens.end(), ids.begin() + static_cast<std::ptrdiff_t>(start),
                        ids.begin() + static_cast<std::ptrdiff_t>(start + static_cast<size_t>(T - 1)));
      row.answers.assign(static_cast<size_t>(T - 1), true);
    }
    return make_batch(rows);
  }

 private:
  int64_t length_of(const std::string& split) const {
    if (split == "train" || split == "test") return length_;
    if (split == "long") return 2 * length_;
    unknown_split(*this, split);
  }

  std::unique_ptr<Tokenizer> tokenizer_;
  std::string json_;  ///< what the checkpoints carry as tokenizer.json
  int64_t length_ = 0;
  std::vector<int64_t> train_, test_;
  std::map<std::string, std::string> options_;
};

}  // namespace

std::unique_ptr<Task> make_text(const TaskSpec& spec, const Tokenizer* model) {
  return std::make_unique<TextCorpus>(spec, model);
}

}  // namespace poslens::train
