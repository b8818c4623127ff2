#pragma once
// poslens-cli train and eval: training PosLens-format models on the tasks of docs/training.md
// and measuring their test error. Errors are thrown as poslens::Error (main.cpp: exit 1).
#include <string>
#include <vector>

#include "core/train/trainer.h"

namespace poslens::cli {

struct TrainCommand {
  train::TrainOptions options;            ///< task name and length, steps, optimiser, ...
  std::vector<std::string> task_options;  ///< KEY=VALUE, parsed into options.task.options
  std::string model_config;               ///< PosLens config.json of the model to train
  std::string out;                        ///< new run folder
  std::string resume;                     ///< run folder to continue (then nothing else but --device)
  bool device_given = false;
};
/// `train`: a new run in `out`, or `--resume RUN`. Ctrl-C (SIGINT/SIGTERM) finishes the step,
/// writes a checkpoint and returns normally; progress goes to stderr.
void train(const TrainCommand& command);

struct EvalCommand {
  std::string checkpoint;
  std::string task;                       ///< empty: the task stored in the checkpoint
  std::vector<std::string> task_options;  ///< KEY=VALUE overriding the stored ones
  int64_t length = 0;                     ///< 0: the stored (or the task's default) length
  std::vector<std::string> splits;        ///< empty: every split of the task
  int64_t n = 500;                        ///< sequences per split
  std::string device = "auto";
  std::string dtype = "float32";
};
/// `eval`: test error (%) and loss of a checkpoint on each split of its task.
void eval(const EvalCommand& command);

}  // namespace poslens::cli
