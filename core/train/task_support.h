#pragma once
// What the task files share: typed option reading, assembling a TaskBatch from rows, the
// check that a trained model's vocabulary is the task's. Internal to core/train.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/tokenizers/vocab_tokenizer.h"
#include "core/train/task.h"

namespace poslens::train {

/// Reads a task's options by name with a default, remembering which were read so that
/// finish() can reject the rest ("unknown option \"blank\" for task selective_copy; known: ...").
class TaskOptions {
 public:
  TaskOptions(const TaskSpec& spec);
  int64_t integer(const std::string& key, int64_t fallback, int64_t min, int64_t max);
  double number(const std::string& key, double fallback, double min, double max);
  std::string text(const std::string& key, const std::string& fallback);
  /// The options as read, every known key with its effective value (for TaskSpec::options).
  std::map<std::string, std::string> finish() const;

 private:
  const std::string* find(const std::string& key);
  /// parse(text, &used) over the whole of `text`; Error "option key="x" is not <what>".
  template <typename Parse>
  auto parse_whole(const std::string& text, const std::string& key, const char* what,
                   Parse parse) const -> decltype(parse(text, nullptr));
  std::string task_;
  std::map<std::string, std::string> given_;
  std::map<std::string, std::string> effective_;
};

/// One sequence of a batch: its tokens and, per prediction position t (predicting token t+1),
/// whether it is padding-free and whether it is scored. answers/real have size tokens-1.
struct TaskRow {
  std::vector<int64_t> tokens;
  std::vector<bool> answers;
  std::vector<bool> real;  ///< empty: every target is a real token
};
/// Stacks equal-length rows. Throws poslens::Error if lengths differ (a generator bug).
TaskBatch make_batch(const std::vector<TaskRow>& rows);

/// Throws poslens::Error unless `model` (when given) has exactly the pieces of `task`.
void check_same_vocabulary(const VocabTokenizer& task, const Tokenizer* model,
                           const std::string& task_name);

/// Throws poslens::Error "unknown split ..." naming the task's splits.
[[noreturn]] void unknown_split(const Task& task, const std::string& split);

using TaskFactory = std::function<std::unique_ptr<Task>(const TaskSpec&, const Tokenizer*)>;
std::unique_ptr<Task> make_flipflop(const TaskSpec& spec, const Tokenizer* model);
std::unique_ptr<Task> make_selective_copy(const TaskSpec& spec, const Tokenizer* model);
std::unique_ptr<Task> make_counting(const TaskSpec& spec, const Tokenizer* model);
std::unique_ptr<Task> make_text(const TaskSpec& spec, const Tokenizer* model);

}  // namespace poslens::train
