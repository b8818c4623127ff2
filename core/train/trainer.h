#pragma once
// Training a PosLens-format model on a task (docs/training.md): AdamW, warm-up then linear or
// cosine decay, gradient clipping, a run folder with a log and a series of checkpoints that
// resumes bit for bit. The forward pass is the runtime's Transformer::forward, the one that
// inference and the analyses use.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/train/evaluate.h"
#include "core/train/task.h"

namespace torch::optim {
class Optimizer;
}

namespace poslens::train {

struct TrainOptions {
  TaskSpec task;
  /// PosLens config.json text of the model (docs/poslens-format.md). vocab_size, n_ctx and
  /// bos_token_id may be left out: they are taken from the task (vocabulary, length L, <bos>);
  /// given, they must agree with it.
  std::string model_json;
  int64_t steps = 1000;
  int64_t batch_size = 32;
  double lr = 1e-3;              ///< peak learning rate
  double min_lr_ratio = 0.0;     ///< the rate at the last step, as a fraction of lr
  int64_t warmup = 100;          ///< steps of linear warm-up from 0 to lr
  std::string schedule = "linear";  ///< decay after warm-up: linear or cosine
  double weight_decay = 0.01;    ///< AdamW's decoupled weight decay, on every parameter
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double clip = 1.0;             ///< max global gradient norm; 0: no clipping
  std::string loss;              ///< "all" or "answers"; empty: the task's default
  uint64_t seed = 0;             ///< weights and data (step_rng)
  /// Block initialisation (poslens_model.h BlockInit): "pytorch" (torch.nn defaults, as the
  /// reference module that MEASURED.md's Flip-Flop figures were trained with) or "gpt2".
  std::string init = "pytorch";
  int64_t checkpoint_every = 0;  ///< also at the end and at step 0; 0: only those two
  /// Further steps to checkpoint at, ascending (denser early in training for a series, as seed
  /// 003 Fig. 2a wants); steps past `steps` are refused.
  std::vector<int64_t> checkpoint_steps;
  int64_t log_every = 10;        ///< steps per line of log.jsonl
  int64_t eval_every = 0;        ///< steps between evaluations on every split; 0: at the end
  int64_t eval_sequences = 200;  ///< sequences per split for those evaluations
  std::string device = "cpu";    ///< cpu, cuda, cuda:N or auto

  /// As stored in the run folder's train.json; from_json checks every key and value.
  std::string to_json() const;
  static TrainOptions from_json(const std::string& text, const std::string& where);
  /// Throws poslens::Error naming the first unusable value.
  void validate() const;
};

/// One line of progress: after every step, and after each evaluation (`eval` non-empty).
struct TrainProgress {
  int64_t step = 0, steps = 0;
  double loss = 0;          ///< this step's training loss (nats per scored token)
  double lr = 0;
  double grad_norm = 0;     ///< before clipping
  double tokens_per_s = 0;  ///< over the steps of this session
  double eta_s = 0;
  std::vector<SplitResult> eval;
  std::string checkpoint;   ///< non-empty: a checkpoint folder was just written
};
using TrainProgressFn = std::function<void(const TrainProgress&)>;

struct TrainResult {
  int64_t step = 0;          ///< steps done
  bool interrupted = false;  ///< stopped by `stop` before the last step
  std::string last_checkpoint;
  std::vector<SplitResult> eval;  ///< the final evaluation (empty when interrupted)
};

/// Starts a run in folder `run_dir` (must not exist, or be empty): writes train.json,
/// step-000000/, then trains. `stop` (optional) is polled after every step: when set, the step
/// is finished, a checkpoint written and the run returns with interrupted = true.
/// Throws poslens::Error for bad options, a model config that does not fit the task, an
/// existing non-empty folder or an I/O error.
TrainResult train(const std::string& run_dir, const TrainOptions& options,
                  const std::atomic<bool>* stop = nullptr, const TrainProgressFn& progress = {});

/// The options `run_dir` was started with (its train.json). Throws poslens::Error when the
/// folder is not a training run or the file is malformed.
TrainOptions run_options(const std::string& run_dir);

/// Continues the run in `run_dir` from its last complete checkpoint with the options it was
/// started with (`device` may differ; empty: as started). Weights, AdamW state and the data
/// stream continue exactly, so the losses equal those of an uninterrupted run. Log lines after
/// that checkpoint and temporary folders of a killed write are removed first.
/// Throws poslens::Error when the folder is not a run or has no checkpoint.
TrainResult resume(const std::string& run_dir, const std::string& device = "",
                   const std::atomic<bool>* stop = nullptr, const TrainProgressFn& progress = {});

/// Loss and gradient norm of one optimiser update.
struct StepResult {
  double loss = 0;       ///< weighted mean next-token cross-entropy (nats), before the update
  double grad_norm = 0;  ///< global L2 norm of the gradients, before clipping
};
/// One update, the trainer's: logits = model.forward(tokens) (int64 [batch, T] on the model's
/// device); loss = Σ weights·CE(logits[:, t], tokens[:, t+1]) / Σ weights with `weights`
/// float32 [batch, T-1]; zero_grad, backward, clip the global norm of `parameters` to `clip`
/// (0: no clipping), optimizer.step(). Benchmarks call it to time exactly what training runs.
StepResult training_step(const Transformer& model, torch::optim::Optimizer& optimizer,
                         const std::vector<at::Tensor>& parameters, const at::Tensor& tokens,
                         const at::Tensor& weights, double clip);

/// The learning rate at `step` (1-based): linear warm-up to lr, then linear or cosine decay
/// to lr·min_lr_ratio at options.steps.
double learning_rate(const TrainOptions& options, int64_t step);

}  // namespace poslens::train
