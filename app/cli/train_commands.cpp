// poslens-cli train / eval (docs/training.md).
#include "app/cli/train_commands.h"

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
#include "core/tokenizers/vocab_tokenizer.h"
#include "core/train/evaluate.h"
#include "core/train/trainer.h"

namespace poslens::cli {
namespace {

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

}  // namespace

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
  const auto* vocab = dynamic_cast<const VocabTokenizer*>(loaded.tokenizer.get());
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

}  // namespace poslens::cli
