// Counting (Golovneva et al. 2024 §5.3): a program of operations on one or more variables,
//   a = 0 ; pass ; a ++ ; b = 0 ; pass ; a ++ ; ... print a 2
// one word per token. The sequence starts by setting every variable to 0 (in random order),
// then draws operations with weights w_set : w_incr : w_pass (paper: 1 : 7 : 50) on a uniformly
// chosen variable (pass names none); an increment of a variable already at max_value (10) is
// redrawn as a set or pass. It ends with "print v N", N the value of v, and is left-padded with
// <pad> to the length L. Scored: the prediction of N (made at v). Splits: test (w_pass 50),
// short (w_pass 10: shorter relevant context) and long (w_pass 100), as Golovneva et al. 2024 Table 4.
#include <torch/torch.h>

#include <algorithm>
#include <sstream>

#include "core/base/error.h"
#include "core/train/task_support.h"

namespace poslens::train {
namespace {

constexpr int64_t kMaxVariables = 5;

std::vector<std::string> vocabulary() {
  std::vector<std::string> pieces{"<pad>"};
  for (int64_t v = 0; v < kMaxVariables; ++v) pieces.emplace_back(1, static_cast<char>('a' + v));
  for (const char* word : {"=", ";", "++", "pass", "print"}) pieces.emplace_back(word);
  for (int value = 0; value <= 10; ++value) pieces.push_back(std::to_string(value));
  pieces.emplace_back("<unk>");  // HF's WordLevel needs one; it stands for any other word
  return pieces;
}

class Counting : public Task {
 public:
  Counting(const TaskSpec& spec, const Tokenizer* model)
      : tokenizer_(VocabTokenizer::Unit::Word, vocabulary(), "", "<unk>") {
    TaskOptions options(spec);
    length_ = spec.length > 0 ? spec.length : 256;
    variables_ = options.integer("variables", 1, 1, kMaxVariables);
    w_set_ = options.number("w_set", 1, 0, 1e6);
    w_incr_ = options.number("w_incr", 7, 0, 1e6);
    w_pass_ = options.number("w_pass", 50, 0, 1e6);
    w_pass_short_ = options.number("w_pass_short", 10, 0, 1e6);
    w_pass_long_ = options.number("w_pass_long", 100, 0, 1e6);
    options_ = options.finish();
    if (w_set_ + w_incr_ + w_pass_ <= 0) throw Error("task counting: every weight is 0");
    const int64_t minimum = 4 * variables_ + 3;  // the initial sets and the print
    if (length_ < minimum || length_ > 1'000'000)
      throw Error("task counting: the length must be at least " + std::to_string(minimum) +
                  " tokens for " + std::to_string(variables_) + " variable(s), got " +
                  std::to_string(length_));
    check_same_vocabulary(tokenizer_, model, "counting");
  }

  TaskSpec spec() const override { return {"counting", length_, options_}; }
  const VocabTokenizer& tokenizer() const override { return tokenizer_; }
  std::string tokenizer_json() const override { return tokenizer_.to_json(); }
  int64_t length() const override { return length_; }
  std::vector<std::string> splits() const override { return {"test", "short", "long"}; }
  std::string describe(const std::string& split) const override {
    std::ostringstream out;
    out << variables_ << " variable(s), w_set " << w_set_ << ", w_incr " << w_incr_
        << ", w_pass " << pass_weight(split) << ", " << length_ << " tokens";
    return out.str();
  }
  std::vector<int64_t> answer_candidates() const override {
    std::vector<int64_t> values;
    for (int value = 0; value <= kMaxValue; ++value) values.push_back(kZero + value);
    return values;
  }
  LossMode default_loss() const override { return LossMode::Answers; }

  TaskBatch sample(const std::string& split, int64_t n, std::mt19937_64& rng) const override {
    const double w_pass = pass_weight(split);
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    std::uniform_int_distribution<int64_t> variable(0, variables_ - 1);
    std::vector<TaskRow> rows(static_cast<size_t>(n));
    for (auto& row : rows) {
      std::vector<int64_t> program, value(static_cast<size_t>(variables_), 0);
      std::vector<int64_t> order(static_cast<size_t>(variables_));
      for (int64_t v = 0; v < variables_; ++v) order[static_cast<size_t>(v)] = v;
      std::shuffle(order.begin(), order.end(), rng);
      for (const int64_t v : order) program.insert(program.end(), {kA + v, kSet, kZero, kSemi});
      // Room for the longest operation (4 tokens) and the print (3) before each draw.
      while (static_cast<int64_t>(program.size()) + 7 <= length_) {
        const int64_t v = variable(rng);
        auto& x = value[static_cast<size_t>(v)];
        const double incr = x < kMaxValue ? w_incr_ : 0.0;
        const double u = uniform(rng) * (w_set_ + incr + w_pass);
        if (u < w_set_) {
          program.insert(program.end(), {kA + v, kSet, kZero, kSemi});
          x = 0;
        } else if (u < w_set_ + incr) {
          program.insert(program.end(), {kA + v, kIncr, kSemi});
          ++x;
        } else {
          program.insert(program.end(), {kPass, kSemi});
        }
      }
      const int64_t v = variable(rng);
      program.insert(program.end(), {kPrint, kA + v, kZero + value[static_cast<size_t>(v)]});
      const size_t pad = static_cast<size_t>(length_) - program.size();
      row.tokens.assign(pad, kPad);
      row.tokens.insert(row.tokens.end(), program.begin(), program.end());
      row.answers.assign(row.tokens.size() - 1, false);
      row.answers[row.tokens.size() - 2] = true;
      row.real.resize(row.tokens.size() - 1);
      for (size_t t = 0; t + 1 < row.tokens.size(); ++t) row.real[t] = row.tokens[t + 1] != kPad;
    }
    return make_batch(rows);
  }

 private:
  static constexpr int64_t kPad = 0, kA = 1, kSet = 6, kSemi = 7, kIncr = 8, kPass = 9,
                           kPrint = 10, kZero = 11, kMaxValue = 10;

  double pass_weight(const std::string& split) const {
    if (split == "train" || split == "test") return w_pass_;
    if (split == "short") return w_pass_short_;
    if (split == "long") return w_pass_long_;
    unknown_split(*this, split);
  }

  VocabTokenizer tokenizer_;
  int64_t length_ = 0, variables_ = 1;
  double w_set_ = 1, w_incr_ = 7, w_pass_ = 50, w_pass_short_ = 10, w_pass_long_ = 100;
  std::map<std::string, std::string> options_;
};

}  // namespace

std::unique_ptr<Task> make_counting(const TaskSpec& spec, const Tokenizer* model) {
  return std::make_unique<Counting>(spec, model);
}

}  // namespace poslens::train
