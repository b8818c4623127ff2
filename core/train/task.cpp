#include "core/train/task.h"

#include <torch/torch.h>

#include <sstream>

#include "core/base/error.h"
#include "core/base/text.h"
#include "core/train/task_support.h"

namespace poslens::train {
namespace {

const std::vector<std::pair<std::string, TaskFactory>>& factories() {
  static const std::vector<std::pair<std::string, TaskFactory>> table{
      {"flipflop", make_flipflop},
      {"selective_copy", make_selective_copy},
      {"counting", make_counting},
      {"text", make_text},
  };
  return table;
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

/// SplitMix64 (Steele et al. 2014): spreads nearby seeds over unrelated generator states.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t hash_text(const std::string& s) {  // FNV-1a, stable across platforms
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

LossMode parse_loss_mode(const std::string& name) {
  if (name == "all") return LossMode::All;
  if (name == "answers") return LossMode::Answers;
  throw Error("unknown loss " + quoted(name) + " (choose all or answers)");
}

const char* to_string(LossMode mode) { return mode == LossMode::All ? "all" : "answers"; }

std::vector<std::string> task_names() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : factories()) names.push_back(name);
  return names;
}

std::unique_ptr<Task> make_task(const TaskSpec& spec, const Tokenizer* tokenizer) {
  for (const auto& [name, factory] : factories())
    if (name == spec.name) return factory(spec, tokenizer);
  throw Error("unknown task " + quoted(spec.name) + " (known: " + join(task_names()) + ")");
}

std::mt19937_64 step_rng(uint64_t seed, int64_t step) {
  std::seed_seq seq{mix(seed), mix(static_cast<uint64_t>(step) ^ 0x5EEDull)};
  return std::mt19937_64(seq);
}

std::mt19937_64 split_rng(const std::string& task, const std::string& split) {
  std::seed_seq seq{mix(hash_text("poslens-test/" + task)), mix(hash_text(split))};
  return std::mt19937_64(seq);
}

TaskOptions::TaskOptions(const TaskSpec& spec) : task_(spec.name), given_(spec.options) {}

template <typename Parse>
auto TaskOptions::parse_whole(const std::string& text, const std::string& key, const char* what,
                              Parse parse) const -> decltype(parse(text, nullptr)) {
  size_t used = 0;
  decltype(parse(text, nullptr)) value{};
  try {
    value = parse(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size())
    throw Error("task " + task_ + ": option " + key + "=" + quoted(text) + " is not " + what);
  return value;
}

const std::string* TaskOptions::find(const std::string& key) {
  const auto it = given_.find(key);
  return it == given_.end() ? nullptr : &it->second;
}

int64_t TaskOptions::integer(const std::string& key, int64_t fallback, int64_t min, int64_t max) {
  int64_t value = fallback;
  if (const auto* text = find(key))
    value = parse_whole(*text, key, "an integer", [](const std::string& t, size_t* used) {
      return std::stoll(t, used);
    });
  if (value < min || value > max)
    throw Error("task " + task_ + ": option " + key + "=" + std::to_string(value) +
                " is outside [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  effective_[key] = std::to_string(value);
  return value;
}

double TaskOptions::number(const std::string& key, double fallback, double min, double max) {
  double value = fallback;
  if (const auto* text = find(key))
    value = parse_whole(*text, key, "a number", [](const std::string& t, size_t* used) {
      return std::stod(t, used);
    });
  if (!(value >= min && value <= max)) {
    std::ostringstream range;
    range << "[" << min << ", " << max << "]";
    throw Error("task " + task_ + ": option " + key + " is outside " + range.str());
  }
  std::ostringstream out;
  out << value;
  effective_[key] = out.str();
  return value;
}

std::string TaskOptions::text(const std::string& key, const std::string& fallback) {
  const auto* given = find(key);
  effective_[key] = given ? *given : fallback;
  return effective_[key];
}

std::map<std::string, std::string> TaskOptions::finish() const {
  for (const auto& [key, value] : given_)
    if (!effective_.count(key)) {
      std::vector<std::string> known;
      for (const auto& [k, v] : effective_) known.push_back(k);
      throw Error("unknown option " + quoted(key) + " for task " + task_ + " (known: " +
                  (known.empty() ? std::string("none") : join(known)) + ")");
    }
  return effective_;
}

TaskBatch make_batch(const std::vector<TaskRow>& rows) {
  if (rows.empty()) throw Error("make_batch: no sequences");
  const auto T = static_cast<int64_t>(rows.front().tokens.size());
  const auto n = static_cast<int64_t>(rows.size());
  auto tokens = torch::empty({n, T}, torch::kLong);
  auto weights = torch::ones({n, T - 1}, torch::kFloat32);
  auto answers = torch::zeros({n, T - 1}, torch::kBool);
  auto tok = tokens.accessor<int64_t, 2>();
  auto w = weights.accessor<float, 2>();
  auto a = answers.accessor<bool, 2>();
  for (int64_t b = 0; b < n; ++b) {
    const auto& row = rows[static_cast<size_t>(b)];
    if (static_cast<int64_t>(row.tokens.size()) != T ||
        static_cast<int64_t>(row.answers.size()) != T - 1 ||
        (!row.real.empty() && static_cast<int64_t>(row.real.size()) != T - 1))
      throw Error("make_batch: sequence " + std::to_string(b) + " has another length");
    for (int64_t t = 0; t < T; ++t) tok[b][t] = row.tokens[static_cast<size_t>(t)];
    for (int64_t t = 0; t + 1 < T; ++t) {
      a[b][t] = row.answers[static_cast<size_t>(t)];
      if (!row.real.empty() && !row.real[static_cast<size_t>(t)]) w[b][t] = 0.0f;
    }
  }
  return {tokens, weights, answers};
}

void check_same_vocabulary(const VocabTokenizer& task, const Tokenizer* model,
                           const std::string& task_name) {
  const auto* vocab = dynamic_cast<const VocabTokenizer*>(model);
  if (model && (!vocab || vocab->pieces() != task.pieces()))
    throw Error("the model's tokenizer (" + std::to_string(model->vocab_size()) +
                " tokens) is not the vocabulary of task " + task_name + " (" +
                std::to_string(task.vocab_size()) + " tokens)");
}

void unknown_split(const Task& task, const std::string& split) {
  std::vector<std::string> names{"train"};
  for (const auto& s : task.splits()) names.push_back(s);
  throw Error("unknown split " + quoted(split) + " for task " + task.spec().name + " (known: " +
              join(names) + ")");
}

}  // namespace poslens::train
