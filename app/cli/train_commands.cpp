// poslens-cli train / eval (docs/training.md).
#include "app/cli/command.h"

#include <torch/torch.h>

#include <atomic>
#include <csignal>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "core/base/error.h"
#include "core/base/untrusted_json.h"
#include "core/runtime/checkpoint.h"
#include "core/train/evaluate.h"
#include "core/train/trainer.h"

namespace poslens::cli {
namespace {

struct TrainCommand {
  train::TrainOptions options;            ///< task name and length, steps, optimiser, ...
  std::vector<std::string> task_options;  ///< KEY=VALUE, parsed into options.task.options
  std::string model_config;               ///< PosLens config.json of the model to train
  std::string out;                        ///< new run folder
  std::string resume;                     ///< run folder to continue (then nothing else but --device)
  bool device_given = false;
};
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

std::atomic<bool> g_stop{false};

void on_interrupt(int) {
  g_stop.store(true);
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process at once (checkpoints are atomic)
  std::signal(SIGTERM, SIG_DFL);
}

std::string duration_text(double seconds) {
  const auto s = static_cast<int64_t>(seconds + 0.5);
  std::ostringstream out;
  if (s >= 3600) out << s / 3600 << "h" << std::setw(2) << std::setfill('0') << (s % 3600) / 60 << "m";
  else if (s >= 60) out << s / 60 << "m" << std::setw(2) << std::setfill('0') << s % 60 << "s";
  else out << s << "s";
  return out.str();
}

void print_results(std::ostream& out, const std::vector<train::SplitResult>& results,
                   const train::Task* task) {
  out << std::left << std::setw(8) << "split" << std::right << std::setw(10) << "sequences"
      << std::setw(10) << "answers" << std::setw(10) << "error %" << std::setw(10) << "loss"
      << "  what\n";
  for (const auto& r : results) {
    out << std::left << std::setw(8) << r.split << std::right;
    if (!r.unavailable.empty()) {
      out << "  not available: " << r.unavailable << "\n";
      continue;
    }
    out << std::setw(10) << r.sequences << std::setw(10) << r.answers << std::fixed
        << std::setprecision(2) << std::setw(10) << r.error_pct << std::setprecision(4)
        << std::setw(10) << r.loss << "  " << (task ? task->describe(r.split) : "") << "\n";
  }
  out.unsetf(std::ios::fixed);
}

/// The progress line: rewritten in place on a terminal, one line per log interval otherwise.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(int64_t log_every) : tty_(::isatty(2) != 0), log_every_(log_every) {}
  void operator()(const train::TrainProgress& p) {
    std::ostringstream line;
    line << "step " << p.step << "/" << p.steps << "  loss " << std::fixed << std::setprecision(4)
         << p.loss << "  lr " << std::scientific << std::setprecision(2) << p.lr << std::fixed
         << std::setprecision(0) << "  " << p.tokens_per_s << " tok/s  ETA "
         << duration_text(p.eta_s);
    if (tty_) {
      std::cerr << "\r" << line.str() << "   " << std::flush;
    } else if (p.step % log_every_ == 0 || p.step == p.steps) {
      std::cerr << line.str() << "\n";
    }
    if (!p.eval.empty() || !p.checkpoint.empty()) {
      if (tty_) std::cerr << "\n";
      if (!p.eval.empty()) print_results(std::cerr, p.eval, nullptr);
      if (!p.checkpoint.empty()) std::cerr << "checkpoint " << p.checkpoint << "\n";
    }
  }

 private:
  bool tty_;
  int64_t log_every_;
};

std::map<std::string, std::string> parse_task_options(const std::vector<std::string>& items) {
  std::map<std::string, std::string> options;
  for (const auto& item : items) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw Error("--task-option " + item + ": expected KEY=VALUE");
    options[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return options;
}

/// `train`: a new run in `out`, or `--resume RUN`. Ctrl-C (SIGINT/SIGTERM) finishes the step,
/// writes a checkpoint and returns normally; progress goes to stderr.
void train(const TrainCommand& command) {
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  train::TrainResult result;
  if (!command.resume.empty()) {
    ProgressPrinter printer(train::run_options(command.resume).log_every);
    std::cerr << "resuming " << command.resume << "\n";
    result = train::resume(command.resume, command.device_given ? command.options.device : "",
                           &g_stop, std::ref(printer));
  } else {
    auto options = command.options;
    options.task.options = parse_task_options(command.task_options);
    options.model_json = read_small_file(command.model_config, kMaxJsonFileBytes);
    ProgressPrinter printer(options.log_every);
    result = train::train(command.out, options, &g_stop, std::ref(printer));
  }
  if (result.interrupted)
    std::cout << "interrupted at step " << result.step << "; checkpoint " << result.last_checkpoint
              << " (continue with: poslens-cli train --resume "
              << (command.resume.empty() ? command.out : command.resume) << ")\n";
  else
    std::cout << "trained " << result.step << " steps; last checkpoint " << result.last_checkpoint
              << "\n";
}

/// `eval`: test error (%) and loss of a checkpoint on each split of its task.
void eval(const EvalCommand& command) {
  LoadOptions load;
  load.device = command.device;
  load.dtype = command.dtype;
  const auto loaded = load_checkpoint(command.checkpoint, load);
  const auto& config = loaded.model->config();

  train::TaskSpec spec;
  if (!config.training_json.empty()) {  // the task the model was trained on, as stored
    const auto training = nlohmann::json::parse(config.training_json);
    spec.name = training.value("task", "");
    spec.length = training.value("length", int64_t{0});
    if (training.contains("task_options") && training["task_options"].is_object())
      for (const auto& [key, value] : training["task_options"].items())
        if (value.is_string()) spec.options[key] = value.get<std::string>();
  }
  if (!command.task.empty() && command.task != spec.name) {
    spec = {command.task, 0, {}};
  }
  for (const auto& [key, value] : parse_task_options(command.task_options)) spec.options[key] = value;
  if (command.length > 0) spec.length = command.length;
  if (spec.name.empty())
    throw Error(command.checkpoint + " has no training metadata: name the task with --task (" +
                [] {
                  std::string names;
                  for (const auto& n : train::task_names()) names += (names.empty() ? "" : ", ") + n;
                  return names;
                }() + ")");
  const auto* vocab = loaded.tokenizer.get();
  if (!vocab)
    throw Error(command.checkpoint + " has no task tokenizer (tokenizer.json) to check against the "
                "task's vocabulary");
  const auto task = train::make_task(spec, vocab);

  std::vector<std::string> splits = command.splits.empty() ? task->splits() : command.splits;
  std::vector<train::SplitResult> results;
  for (const auto& split : splits)
    results.push_back(train::evaluate(*loaded.model, *task, split, command.n));
  std::cout << "task " << spec.name << ", training length " << task->length() << ", "
            << command.n << " sequences per split\n";
  print_results(std::cout, results, task.get());
}

CLI::App* add_train_command(CLI::App& app, TrainCommand& c) {
  auto& o = c.options;
  auto* cmd = app.add_subcommand(
      "train", "Train a PosLens-format model on a task; writes a run folder with checkpoints "
               "(docs/training.md)");
  cmd->add_option("--task", o.task.name, "flipflop, selective_copy, counting or text");
  cmd->add_option("--model", c.model_config, "PosLens config.json of the model to train")
      ->check(CLI::ExistingFile);
  cmd->add_option("--out", c.out, "New run folder");
  cmd->add_option("--resume", c.resume, "Continue this run folder from its last checkpoint")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--length", o.task.length, "Training length L in tokens (default: the task's)");
  cmd->add_option("--task-option", c.task_options, "Task parameter KEY=VALUE (repeatable)");
  cmd->add_option("--steps", o.steps, "Optimiser steps")->capture_default_str();
  cmd->add_option("--batch-size", o.batch_size, "Sequences per step")->capture_default_str();
  cmd->add_option("--lr", o.lr, "Peak learning rate")->capture_default_str();
  cmd->add_option("--min-lr-ratio", o.min_lr_ratio, "Final rate as a fraction of --lr")
      ->capture_default_str();
  cmd->add_option("--warmup", o.warmup, "Linear warm-up steps")->capture_default_str();
  cmd->add_option("--schedule", o.schedule, "Decay after warm-up")
      ->check(CLI::IsMember({"linear", "cosine"}))
      ->capture_default_str();
  cmd->add_option("--weight-decay", o.weight_decay, "AdamW weight decay")->capture_default_str();
  cmd->add_option("--clip", o.clip, "Max gradient norm (0: none)")->capture_default_str();
  cmd->add_option("--loss", o.loss, "all (every next token) or answers (scored positions only); "
                                    "default: the task's")
      ->check(CLI::IsMember({"all", "answers"}));
  cmd->add_option("--seed", o.seed, "Seed of the weights and the data")->capture_default_str();
  cmd->add_option("--init", o.init, "Block initialisation: pytorch (torch.nn defaults) or gpt2 "
                                    "(N(0, 0.02))")
      ->check(CLI::IsMember({"pytorch", "gpt2"}))
      ->capture_default_str();
  cmd->add_option("--checkpoint-every", o.checkpoint_every,
                  "Steps between checkpoints (also step 0 and the last; 0: only those)")
      ->capture_default_str();
  cmd->add_option("--checkpoint-at", o.checkpoint_steps,
                  "Further steps to checkpoint at, ascending, comma-separated (e.g. 25,50,100,200)")
      ->delimiter(',');
  cmd->add_option("--log-every", o.log_every, "Steps per log line")->capture_default_str();
  cmd->add_option("--eval-every", o.eval_every, "Steps between evaluations (0: at the end)")
      ->capture_default_str();
  cmd->add_option("--eval-sequences", o.eval_sequences, "Sequences per split when evaluating")
      ->capture_default_str();
  cmd->add_option("--device", o.device, "cpu, cuda, cuda:N or auto")->capture_default_str();
  return cmd;
}

/// A new run needs --task, --model and --out; --resume takes nothing but --device.
void check_train_command(const CLI::App& cmd, TrainCommand& c) {
  c.device_given = cmd.count("--device") > 0;
  if (!c.resume.empty()) {
    for (const auto* option : cmd.get_options())
      if (option->count() > 0 && option->get_name() != "--resume" && option->get_name() != "--device")
        throw CLI::ValidationError(option->get_name(),
                                   "cannot be combined with --resume (the run keeps its options)");
    return;
  }
  for (const char* required : {"--task", "--model", "--out"})
    if (cmd.count(required) == 0) throw CLI::RequiredError(required);
}

}  // namespace

Command train_command() {
  auto c = std::make_shared<TrainCommand>();
  auto cmd = std::make_shared<CLI::App*>(nullptr);
  return {[=](CLI::App& app) { return *cmd = add_train_command(app, *c); },
          [=] { check_train_command(**cmd, *c); }, [=] { train(*c); }};
}

Command eval_command() {
  auto c = std::make_shared<EvalCommand>();
  return {[=](CLI::App& app) {
            auto* cmd = app.add_subcommand("eval", "Test error (%) of a trained model on each split of its task");
            cmd->add_option("checkpoint", c->checkpoint, "Model folder (e.g. a run's step-001500)")->required();
            cmd->add_option("--task", c->task, "Task (default: the one stored in the checkpoint)");
            cmd->add_option("--task-option", c->task_options, "Task parameter KEY=VALUE (repeatable)");
            cmd->add_option("--length", c->length, "Sequence length (default: the stored one)");
            cmd->add_option("--split", c->splits, "Split(s) to evaluate (default: all)")->delimiter(',');
            cmd->add_option("--n", c->n, "Sequences per split")->capture_default_str()->check(CLI::Range(1, 10000000));
            cmd->add_option("--device", c->device, "cpu, cuda, cuda:N or auto")->capture_default_str();
            cmd->add_option("--dtype", c->dtype, "float32, bfloat16 or float16")->capture_default_str();
            return cmd;
          },
          {}, [=] { eval(*c); }};
}

}  // namespace poslens::cli
