#include "core/train/trainer.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "core/base/untrusted_json.h"
#include "core/models/poslens_model.h"
#include "core/runtime/checkpoint.h"
#include "core/tokenizers/tokenizer_files.h"
#include "core/train/run_folder.h"

namespace poslens::train {
namespace {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

/// The model config the options name, with vocab_size, n_ctx and bos_token_id from the task.
ModelConfig model_config_for(const TrainOptions& o, const Task& task) {
  auto j = parse_untrusted_json(o.model_json.data(), o.model_json.data() + o.model_json.size(),
                                "model config", "config.json");
  if (!j.is_object()) throw Error("model config: not a JSON object");
  auto fill = [&](const char* key, int64_t value, const char* meaning) {
    if (!j.contains(key) || j[key].is_null()) {
      j[key] = value;
    } else if (!j[key].is_number_integer() || j[key].get<int64_t>() != value) {
      throw Error(std::string("model config: \"") + key + "\" is " + j[key].dump() + " but task " +
                  task.spec().name + " has " + meaning + " " + std::to_string(value) +
                  " (leave it out to take the task's)");
    }
  };
  fill("vocab_size", task.tokenizer().vocab_size(), "a vocabulary of");
  fill("n_ctx", task.length(), "training length");
  if (task.tokenizer().bos_id() >= 0) fill("bos_token_id", task.tokenizer().bos_id(), "BOS id");
  return poslens_config_from_text(j.dump(), "model config");
}

/// A run in progress: the task, the model, its parameters and their optimiser.
struct Run {
  std::string dir;
  TrainOptions options;
  std::unique_ptr<Task> task;
  std::unique_ptr<Transformer> model;
  std::vector<at::Tensor> parameters;
  std::unique_ptr<torch::optim::AdamW> optimizer;
  LossMode loss_mode = LossMode::All;
  double elapsed_before = 0;  ///< training seconds of earlier sessions (resume)

  std::string log_path() const { return (fs::path(dir) / "log.jsonl").string(); }

  void make_optimizer() {
    parameters.clear();
    for (auto& [name, tensor] : named_parameters(model->config(), model->weights())) {
      tensor.requires_grad_(true);
      parameters.push_back(tensor);
    }
    torch::optim::AdamWOptions adam(options.lr);
    adam.betas({options.beta1, options.beta2}).eps(options.eps).weight_decay(options.weight_decay);
    optimizer = std::make_unique<torch::optim::AdamW>(parameters, adam);
  }

  /// One optimiser update on the batch of `step`; returns {loss, gradient norm}.
  std::pair<double, double> step(int64_t step_number) {
    auto rng = step_rng(options.seed, step_number);
    const auto batch = task->sample("train", options.batch_size, rng);
    const auto device = model->device();
    const auto tokens = batch.tokens.to(device);
    const auto weights =
        (loss_mode == LossMode::All ? batch.weights : batch.answers.to(torch::kFloat32)).to(device);
    const double lr = learning_rate(options, step_number);
    for (auto& group : optimizer->param_groups()) group.options().set_lr(lr);

    const auto result = training_step(*model, *optimizer, parameters, tokens, weights, options.clip);
    return {result.loss, result.grad_norm};
  }

  std::vector<SplitResult> evaluate_all() const {
    std::vector<SplitResult> results;
    for (const auto& split : task->splits())
      results.push_back(evaluate(*model, *task, split, options.eval_sequences));
    return results;
  }

  /// Writes step-N/ (model, tokenizer, optimiser, trainer state) atomically; returns its path.
  std::string save(int64_t step_number, double loss, double elapsed,
                   const std::vector<SplitResult>& eval) const {
    const auto path = (fs::path(dir) / checkpoint_name(step_number)).string();
    if (fs::exists(path)) return path;
    nlohmann::ordered_json training;
    const auto spec = task->spec();
    training["task"] = spec.name;
    training["length"] = spec.length;
    training["task_options"] = spec.options;
    training["step"] = step_number;
    training["steps"] = options.steps;
    training["seed"] = options.seed;
    training["init"] = options.init;
    training["loss"] = loss;
    training["loss_mode"] = to_string(loss_mode);
    training["batch_size"] = options.batch_size;
    training["lr"] = options.lr;
    for (const auto& r : eval)
      if (r.unavailable.empty())
        training["eval"][r.split] = {{"error_pct", r.error_pct}, {"loss", r.loss},
                                     {"sequences", r.sequences}};
    auto config = model->config();
    config.training_json = training.dump();
    nlohmann::ordered_json state{{"step", step_number}, {"seed", options.seed},
                                 {"loss", loss}, {"elapsed_s", elapsed},
                                 {"data", "batch of step s = step_rng(seed, s)"}};
    write_poslens_model(path, config, model->weights(), [&](const std::string& folder) {
      // Checked writes: a failed one aborts the checkpoint instead of leaving it incomplete.
      write_text_file((fs::path(folder) / "tokenizer.json").string(), task->tokenizer_json() + "\n");
      write_text_file((fs::path(folder) / "trainer_state.json").string(), state.dump(2) + "\n");
      torch::save(*optimizer, (fs::path(folder) / "optimizer.pt").string());
    });
    return path;
  }

  void log_eval(int64_t step_number, const std::vector<SplitResult>& results) const {
    nlohmann::ordered_json line{{"step", step_number}};
    for (const auto& r : results) {
      if (r.unavailable.empty())
        line["eval"][r.split] = {{"error_pct", r.error_pct}, {"loss", r.loss}, {"answers", r.answers}};
      else
        line["eval"][r.split] = {{"unavailable", r.unavailable}};
    }
    append_log(log_path(), line.dump());
  }

  TrainResult loop(int64_t first_step, const std::atomic<bool>* stop,
                   const TrainProgressFn& progress) {
    TrainResult result;
    result.step = first_step - 1;
    const auto start = Clock::now();
    const int64_t tokens_per_step = options.batch_size * task->length();
    double loss = 0;
    for (int64_t s = first_step; s <= options.steps; ++s) {
      const auto [step_loss, norm] = step(s);
      loss = step_loss;
      result.step = s;
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      const double per_step = seconds / static_cast<double>(s - first_step + 1);
      const bool stopping = stop && stop->load();
      if (s % options.log_every == 0 || s == options.steps || stopping) {
        nlohmann::ordered_json line{{"step", s}, {"loss", loss}, {"lr", learning_rate(options, s)},
                                    {"grad_norm", norm}, {"tokens_per_s", tokens_per_step / per_step},
                                    {"elapsed_s", elapsed_before + seconds}};
        append_log(log_path(), line.dump());
      }
      TrainProgress p{s, options.steps, loss, learning_rate(options, s), norm,
                      tokens_per_step / per_step, per_step * static_cast<double>(options.steps - s)};
      const bool last = s == options.steps;
      const bool evaluate_now = last || (options.eval_every > 0 && s % options.eval_every == 0);
      if (evaluate_now && !stopping) {
        p.eval = evaluate_all();
        log_eval(s, p.eval);
        if (last) result.eval = p.eval;
      }
      const bool listed = std::binary_search(options.checkpoint_steps.begin(), options.checkpoint_steps.end(), s);
      if (last || stopping || listed || (options.checkpoint_every > 0 && s % options.checkpoint_every == 0)) {
        p.checkpoint = save(s, loss, elapsed_before + seconds, last ? p.eval : std::vector<SplitResult>{});
        result.last_checkpoint = p.checkpoint;
      }
      if (progress) progress(p);
      if (stopping && !last) {
        result.interrupted = true;
        break;
      }
    }
    return result;
  }
};

}  // namespace

StepResult training_step(const Transformer& model, torch::optim::Optimizer& optimizer,
                         const std::vector<at::Tensor>& parameters, const at::Tensor& tokens,
                         const at::Tensor& weights, double clip) {
  const auto logits = model.forward(tokens);
  const int64_t T = tokens.size(1);
  const auto nll = torch::nn::functional::cross_entropy(
      logits.slice(1, 0, T - 1).reshape({-1, logits.size(-1)}), tokens.slice(1, 1).reshape({-1}),
      torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  const auto loss = (nll * weights.reshape({-1})).sum() / weights.sum().clamp_min(1.0);
  optimizer.zero_grad();
  loss.backward();
  StepResult result;
  if (clip > 0) {
    result.grad_norm = torch::nn::utils::clip_grad_norm_(parameters, clip);
  } else {
    double sum = 0;
    for (const auto& p : parameters)
      if (p.grad().defined()) sum += p.grad().pow(2).sum().item<double>();
    result.grad_norm = std::sqrt(sum);
  }
  optimizer.step();
  result.loss = loss.item<double>();
  return result;
}

namespace {

std::unique_ptr<Transformer> fresh_model(const ModelConfig& config, const TrainOptions& o) {
  const auto weights = initialize_weights(config, o.seed, parse_block_init(o.init));
  return std::make_unique<Transformer>(config, weights_on(config, weights, parse_device(o.device)));
}

/// A new run from step 0 in `run.dir`: fresh weights (from the options' seed), train.json, the
/// step-0 checkpoint, then the loop. Also what resume() does for a folder that a kill left with
/// train.json but no complete checkpoint, so such a folder is never stuck.
TrainResult start(Run run, const ModelConfig& config, const std::atomic<bool>* stop,
                  const TrainProgressFn& progress) {
  run.model = fresh_model(config, run.options);
  run.make_optimizer();
  write_text_file((fs::path(run.dir) / "train.json").string(), run.options.to_json() + "\n");
  run.save(0, 0.0, 0.0, {});
  return run.loop(1, stop, progress);
}

}  // namespace

TrainResult train(const std::string& run_dir, const TrainOptions& options,
                  const std::atomic<bool>* stop, const TrainProgressFn& progress) {
  options.validate();
  Run run;
  run.dir = run_dir;
  run.options = options;
  run.task = make_task(options.task);
  run.options.task = run.task->spec();  // effective length and every option, as stored
  run.loss_mode = options.loss.empty() ? run.task->default_loss() : parse_loss_mode(options.loss);
  const auto config = model_config_for(options, *run.task);
  run.options.model_json = poslens_config_json(config, 2);

  std::error_code ec;
  if (fs::exists(run_dir, ec) && !fs::is_empty(run_dir, ec))
    throw Error("train: " + run_dir + " already exists and is not empty (use --resume " + run_dir +
                " to continue that run, or choose a new folder)");
  fs::create_directories(run_dir, ec);
  if (ec) throw Error("train: cannot create " + run_dir + ": " + ec.message());

  return start(std::move(run), config, stop, progress);
}

TrainOptions run_options(const std::string& run_dir) {
  const auto train_json = (fs::path(run_dir) / "train.json").string();
  if (!fs::exists(train_json))
    throw Error("resume: " + run_dir + " is not a training run (no train.json)");
  return TrainOptions::from_json(read_small_file(train_json, kMaxJsonFileBytes), train_json);
}

TrainResult resume(const std::string& run_dir, const std::string& device,
                   const std::atomic<bool>* stop, const TrainProgressFn& progress) {
  Run run;
  run.dir = run_dir;
  run.options = run_options(run_dir);
  if (!device.empty()) run.options.device = device;
  remove_partial_checkpoints(run_dir);
  const auto steps = checkpoint_steps(run_dir);
  if (steps.empty()) {  // killed between train.json and the step-0 checkpoint: start over
    run.task = make_task(run.options.task);
    run.loss_mode = run.options.loss.empty() ? run.task->default_loss()
                                             : parse_loss_mode(run.options.loss);
    const auto config = model_config_for(run.options, *run.task);
    std::error_code ignored;
    fs::remove(run.log_path(), ignored);
    return start(std::move(run), config, stop, progress);
  }
  const int64_t last = steps.back();
  const auto folder = fs::path(run_dir) / checkpoint_name(last);
  const auto tokenizer = read_tokenizer((folder / "tokenizer.json").string());
  run.task = make_task(run.options.task, tokenizer.get());
  run.loss_mode = run.options.loss.empty() ? run.task->default_loss()
                                           : parse_loss_mode(run.options.loss);

  LoadOptions load;
  load.device = run.options.device;
  auto loaded = load_checkpoint(folder.string(), load);
  run.model = std::move(loaded.model);
  run.make_optimizer();
  torch::load(*run.optimizer, (folder / "optimizer.pt").string());
  const auto state = nlohmann::json::parse(
      read_small_file((folder / "trainer_state.json").string(), kMaxJsonFileBytes));
  run.elapsed_before = state.value("elapsed_s", 0.0);
  truncate_log(run.log_path(), last);
  TrainResult result = run.loop(last + 1, stop, progress);
  if (last >= run.options.steps) result.step = last;
  if (result.last_checkpoint.empty()) result.last_checkpoint = folder.string();
  return result;
}

}  // namespace poslens::train
