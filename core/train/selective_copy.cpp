// Selective copy (Gu & Dao 2023, as Golovneva et al. 2024 §5.2 uses it): `copies` data tokens scattered
// among `blanks` blank tokens, a separator, then the data tokens again in order with the blanks
// left out: "DB.C..F|DBCF". Vocabulary of 16 characters as in the paper: 14 data letters A-N,
// the blank "." and the separator "|". Scored: every copied token (the predictions made from
// the separator on); error = % of copied tokens wrong.
// Scaled to this machine (documented in docs/training.md): the paper copies 256 tokens among
// 256 blanks (OOD dense 128, sparse 512); the default here copies 16 among 16 (dense 8, sparse
// 32), all three set by options. The sequence length is 2·copies + blanks + 1.
#include <torch/torch.h>

#include <algorithm>
#include <numeric>
#include <sstream>

#include "core/base/error.h"
#include "core/train/task_support.h"

namespace poslens::train {
namespace {

std::vector<std::string> vocabulary() {
  std::vector<std::string> pieces;
  for (char c = 'A'; c <= 'N'; ++c) pieces.emplace_back(1, c);
  pieces.emplace_back(".");
  pieces.emplace_back("|");
  return pieces;
}

class SelectiveCopy : public Task {
 public:
  SelectiveCopy(const TaskSpec& spec, const Tokenizer* model)
      : tokenizer_(VocabTokenizer::Unit::Character, vocabulary()) {
    TaskOptions options(spec);
    copies_ = options.integer("copies", 16, 1, 100000);
    blanks_ = options.integer("blanks", copies_, 0, 1000000);
    dense_ = options.integer("blanks_dense", blanks_ / 2, 0, 1000000);
    sparse_ = options.integer("blanks_sparse", blanks_ * 2, 0, 1000000);
    options_ = options.finish();
    if (spec.length > 0 && spec.length != length())
      throw Error("task selective_copy: the length is 2*copies + blanks + 1 = " +
                  std::to_string(length()) + "; set copies= and blanks= instead of a length of " +
                  std::to_string(spec.length));
    check_same_vocabulary(tokenizer_, model, "selective_copy");
  }

  TaskSpec spec() const override { return {"selective_copy", length(), options_}; }
  const VocabTokenizer& tokenizer() const override { return tokenizer_; }
  std::string tokenizer_json() const override { return tokenizer_.to_json(); }
  int64_t length() const override { return 2 * copies_ + blanks_ + 1; }
  std::vector<std::string> splits() const override { return {"test", "dense", "sparse"}; }
  std::string describe(const std::string& split) const override {
    const int64_t blanks = blanks_of(split);
    std::ostringstream out;
    out << copies_ << " tokens among " << blanks << " blanks, " << 2 * copies_ + blanks + 1
        << " tokens";
    return out.str();
  }
  LossMode default_loss() const override { return LossMode::Answers; }

  TaskBatch sample(const std::string& split, int64_t n, std::mt19937_64& rng) const override {
    const int64_t blanks = blanks_of(split);
    const int64_t slots = copies_ + blanks;
    std::uniform_int_distribution<int64_t> letter(0, kBlank - 1);
    std::vector<TaskRow> rows(static_cast<size_t>(n));
    std::vector<int64_t> order(static_cast<size_t>(slots));
    for (auto& row : rows) {
      // Which slots hold data: the first `copies_` of a random permutation.
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), rng);
      std::vector<bool> is_data(static_cast<size_t>(slots), false);
      for (int64_t k = 0; k < copies_; ++k) is_data[static_cast<size_t>(order[k])] = true;
      std::vector<int64_t> data;
      for (int64_t s = 0; s < slots; ++s) {
        const int64_t token = is_data[static_cast<size_t>(s)] ? letter(rng) : kBlank;
        if (token != kBlank) data.push_back(token);
        row.tokens.push_back(token);
      }
      row.tokens.push_back(kSeparator);
      row.tokens.insert(row.tokens.end(), data.begin(), data.end());
      row.answers.assign(row.tokens.size() - 1, false);
      for (size_t t = static_cast<size_t>(slots); t + 1 < row.tokens.size(); ++t)
        row.answers[t] = true;
    }
    return make_batch(rows);
  }

 private:
  static constexpr int64_t kBlank = 14, kSeparator = 15;

  int64_t blanks_of(const std::string& split) const {
    if (split == "train" || split == "test") return blanks_;
    if (split == "dense") return dense_;
    if (split == "sparse") return sparse_;
    unknown_split(*this, split);
  }

  VocabTokenizer tokenizer_;
  int64_t copies_ = 0, blanks_ = 0, dense_ = 0, sparse_ = 0;
  std::map<std::string, std::string> options_;
};

}  // namespace

std::unique_ptr<Task> make_selective_copy(const TaskSpec& spec, const Tokenizer* model) {
  return std::make_unique<SelectiveCopy>(spec, model);
}

}  // namespace poslens::train
