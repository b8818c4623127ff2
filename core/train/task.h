#pragma once
// Training and evaluation tasks: seeded generators of token sequences with the positions whose
// prediction is scored, each with an in-distribution test split and out-of-distribution splits
// (docs/training.md). The tasks of Golovneva et al. 2024 §5 (Flip-Flop, selective copy, counting) and
// character-level language modelling on a text corpus.
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "core/tokenizers/tokenizer.h"

namespace poslens::train {

/// Which next-token predictions the training loss averages over.
enum class LossMode {
  All,      ///< every real token (not padding): plain language modelling (Liu et al.'s Flip-Flop)
  Answers,  ///< only the scored positions (the task's answers)
};
LossMode parse_loss_mode(const std::string& name);  ///< "all" / "answers"; Error otherwise
const char* to_string(LossMode mode);

/// A batch of equal-length sequences. Position t of `weights` / `answers` is the prediction of
/// tokens[:, t+1] made at position t.
struct TaskBatch {
  at::Tensor tokens;   ///< int64 [batch, T], CPU
  at::Tensor weights;  ///< float32 [batch, T-1]: 1 where the target is a real token, 0 on padding
  at::Tensor answers;  ///< bool [batch, T-1]: the scored predictions (read bits, copies, counts)
};

/// What names a task and its parameters; stored in every checkpoint's "training" metadata so
/// that `eval` rebuilds the same task.
struct TaskSpec {
  std::string name;                            ///< flipflop, selective_copy, counting, text
  int64_t length = 0;                          ///< training length L in tokens; 0: the default
  std::map<std::string, std::string> options;  ///< task parameters (docs/training.md)
};

class Task {
 public:
  virtual ~Task() = default;
  /// The task as stored in metadata: name, effective length and every option's value.
  virtual TaskSpec spec() const = 0;
  /// The vocabulary: the task's own (a VocabTokenizer), or for `text` with option tokenizer=FILE
  /// that HF tokenizer.json (byte-level BPE and the rest, hf_tokenizer.h).
  virtual const Tokenizer& tokenizer() const = 0;
  /// The tokenizer.json written beside every checkpoint (HF's format; HF's tokenizers reads it).
  virtual std::string tokenizer_json() const = 0;
  /// Training length L (tokens per training sequence), the checkpoints' n_ctx.
  virtual int64_t length() const = 0;
  /// Test splits, in-distribution ("test") first, then the out-of-distribution ones.
  virtual std::vector<std::string> splits() const = 0;
  /// One line: what `split` draws (for eval output and docs).
  virtual std::string describe(const std::string& split) const = 0;
  /// `n` sequences of `split` ("train" or one of splits()) drawn from `rng`.
  /// Throws poslens::Error for an unknown split.
  virtual TaskBatch sample(const std::string& split, int64_t n, std::mt19937_64& rng) const = 0;
  /// Tokens an answer is chosen among (argmax over these logits); empty: the whole vocabulary.
  virtual std::vector<int64_t> answer_candidates() const { return {}; }
  /// The loss this task trains with unless told otherwise.
  virtual LossMode default_loss() const = 0;
};

/// Builds a task. `tokenizer`, when given, is the vocabulary of a trained model (its
/// tokenizer.json, read_tokenizer()): tasks whose vocabulary depends on data (text) adopt it,
/// the others, and text on a tokenizer file, check it equals theirs. Throws poslens::Error for
/// an unknown task (listing the known ones), an unknown or malformed option (naming it), a
/// length the task cannot use, a missing corpus, or a model vocabulary that differs from the
/// task's.
std::unique_ptr<Task> make_task(const TaskSpec& spec, const Tokenizer* tokenizer = nullptr);
/// Names make_task accepts, for help text and messages.
std::vector<std::string> task_names();

/// The random stream of training step `step` for run seed `seed` (a pure function of both, so
/// a resumed run draws exactly the batches an uninterrupted one would).
std::mt19937_64 step_rng(uint64_t seed, int64_t step);
/// The random stream of a test split: fixed for every model and run, distinct from training.
std::mt19937_64 split_rng(const std::string& task, const std::string& split);

}  // namespace poslens::train
