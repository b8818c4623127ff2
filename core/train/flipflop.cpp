// Flip-Flop language modelling (Liu et al. 2023, "Exposing attention glitches with flip-flop
// language modeling"; as Golovneva et al. 2024 §5.1 uses it). A sequence is L/2 instruction-bit pairs over
// the characters w r i 0 1, one token each. The first instruction is w, the last r; the others
// are w / r / i with probabilities p_w = p_r = (1 - p_i)/2. The bit after w and i is uniform;
// the bit after r is the bit of the last w. Scored: the prediction made at each r (argmax over
// the logits of 0 and 1). Splits: test (p_i = 0.8, as training), ood (p_i = 0.98).
#include <torch/torch.h>

#include <sstream>

#include "core/base/error.h"
#include "core/train/task_support.h"

namespace poslens::train {
namespace {

constexpr double kTrainIgnore = 0.8;
constexpr double kOodIgnore = 0.98;

class FlipFlop : public Task {
 public:
  FlipFlop(const TaskSpec& spec, const Tokenizer* model)
      : tokenizer_(VocabTokenizer::Unit::Character, {"w", "r", "i", "0", "1"}) {
    TaskOptions options(spec);
    length_ = spec.length > 0 ? spec.length : 128;
    if (length_ < 4 || length_ % 2 != 0 || length_ > 1'000'000)
      throw Error("task flipflop: the length must be even and at least 4 (pairs of instruction "
                  "and bit), got " + std::to_string(length_));
    train_ignore_ = options.number("p_ignore", kTrainIgnore, 0.0, 0.999);
    ood_ignore_ = options.number("p_ignore_ood", kOodIgnore, 0.0, 0.999);
    options_ = options.finish();
    check_same_vocabulary(tokenizer_, model, "flipflop");
  }

  TaskSpec spec() const override { return {"flipflop", length_, options_}; }
  const VocabTokenizer& tokenizer() const override { return tokenizer_; }
  std::string tokenizer_json() const override { return tokenizer_.to_json(); }
  int64_t length() const override { return length_; }
  std::vector<std::string> splits() const override { return {"test", "ood"}; }
  std::string describe(const std::string& split) const override {
    std::ostringstream out;
    out << "ignore probability " << ignore_of(split) << ", " << length_ << " tokens";
    return out.str();
  }
  std::vector<int64_t> answer_candidates() const override { return {kZero, kOne}; }
  LossMode default_loss() const override { return LossMode::All; }

  TaskBatch sample(const std::string& split, int64_t n, std::mt19937_64& rng) const override {
    const double p_ignore = ignore_of(split);
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    std::bernoulli_distribution coin(0.5);
    std::vector<TaskRow> rows(static_cast<size_t>(n));
    const int64_t pairs = length_ / 2;
    for (auto& row : rows) {
      row.tokens.reserve(static_cast<size_t>(length_));
      row.answers.assign(static_cast<size_t>(length_ - 1), false);
      int64_t memory = 0;
      for (int64_t p = 0; p < pairs; ++p) {
        int64_t instruction;
        if (p == 0) {
          instruction = kWrite;
        } else if (p == pairs - 1) {
          instruction = kRead;
        } else {
          const double u = uniform(rng);
          instruction = u < p_ignore ? kIgnore : u < p_ignore + (1 - p_ignore) / 2 ? kWrite : kRead;
        }
        int64_t bit = coin(rng) ? kOne : kZero;
        if (instruction == kWrite) memory = bit;
        if (instruction == kRead) {
          bit = memory;
          row.answers[row.tokens.size()] = true;  // predicted at the r itself
        }
        row.tokens.push_back(instruction);
        row.tokens.push_back(bit);
      }
    }
    return make_batch(rows);
  }

 private:
  static constexpr int64_t kWrite = 0, kRead = 1, kIgnore = 2, kZero = 3, kOne = 4;

  double ignore_of(const std::string& split) const {
    if (split == "train" || split == "test") return train_ignore_;
    if (split == "ood") return ood_ignore_;
    unknown_split(*this, split);
  }

  VocabTokenizer tokenizer_;
  int64_t length_ = 0;
  double train_ignore_ = kTrainIgnore, ood_ignore_ = kOodIgnore;
  std::map<std::string, std::string> options_;
};

}  // namespace

std::unique_ptr<Task> make_flipflop(const TaskSpec& spec, const Tokenizer* model) {
  return std::make_unique<FlipFlop>(spec, model);
}

}  // namespace poslens::train
