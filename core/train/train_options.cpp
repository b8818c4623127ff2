// TrainOptions as JSON (the run folder's train.json), the checks, the learning-rate schedule.
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "core/base/json_fields.h"
#include "core/base/text.h"
#include "core/base/untrusted_json.h"
#include "core/models/poslens_model.h"
#include "core/train/trainer.h"

namespace poslens::train {

std::string TrainOptions::to_json() const {
  nlohmann::ordered_json j;
  j["format"] = "poslens-train-run";
  j["format_version"] = 1;
  j["task"] = {{"name", task.name}, {"length", task.length}, {"options", task.options}};
  j["steps"] = steps;
  j["batch_size"] = batch_size;
  j["lr"] = lr;
  j["min_lr_ratio"] = min_lr_ratio;
  j["warmup"] = warmup;
  j["schedule"] = schedule;
  j["weight_decay"] = weight_decay;
  j["betas"] = {beta1, beta2};
  j["eps"] = eps;
  j["clip"] = clip;
  j["loss"] = loss;
  j["seed"] = seed;
  j["init"] = init;
  j["checkpoint_every"] = checkpoint_every;
  if (!checkpoint_steps.empty()) j["checkpoint_steps"] = checkpoint_steps;
  j["log_every"] = log_every;
  j["eval_every"] = eval_every;
  j["eval_sequences"] = eval_sequences;
  j["device"] = device;
  j["model"] = nlohmann::ordered_json::parse(model_json);
  return j.dump(2);
}

TrainOptions TrainOptions::from_json(const std::string& text, const std::string& where) {
  using namespace fields;
  const auto parsed = parse_untrusted_json(text.data(), text.data() + text.size(), where, "train.json");
  const nlohmann::json j = nlohmann::json::parse(parsed.dump());
  if (!j.is_object() || j.value("format", "") != "poslens-train-run")
    throw Error(where + ": not a PosLens training run (train.json)");
  if (int_or(j, "format_version", 1, where) != 1)
    throw Error(where + ": format_version is newer than this PosLens reads (1)");
  TrainOptions o;
  try {
  const auto& task = j.at("task");
  o.task.name = task.at("name").get<std::string>();
  o.task.length = require_int(task, "length", where);
  for (const auto& [key, value] : task.at("options").items()) o.task.options[key] = value.get<std::string>();
  o.steps = require_int(j, "steps", where);
  o.batch_size = require_int(j, "batch_size", where);
  o.lr = number_or(j, "lr", o.lr, where);
  o.min_lr_ratio = number_or(j, "min_lr_ratio", o.min_lr_ratio, where);
  o.warmup = int_or(j, "warmup", o.warmup, where);
  o.schedule = choice_or_first(j, "schedule", {"linear", "cosine"}, where);
  o.weight_decay = number_or(j, "weight_decay", o.weight_decay, where);
  const auto betas = j.at("betas");
  o.beta1 = betas.at(0).get<double>();
  o.beta2 = betas.at(1).get<double>();
  o.eps = number_or(j, "eps", o.eps, where);
  o.clip = number_or(j, "clip", o.clip, where);
  o.loss = j.value("loss", "");
  // Not a size: any unsigned 64-bit seed (require_int caps at 2^31 − 1).
  const auto seed = j.find("seed");
  if (seed == j.end() || !seed->is_number_integer() ||
      (!seed->is_number_unsigned() && seed->get<int64_t>() < 0))
    throw Error(where + ": \"seed\" must be a non-negative integer");
  o.seed = seed->get<uint64_t>();
  o.init = choice_or_first(j, "init", {"pytorch", "gpt2"}, where);
  o.checkpoint_every = int_or(j, "checkpoint_every", 0, where);
  if (j.contains("checkpoint_steps")) {
    const auto& list = j.at("checkpoint_steps");
    if (!list.is_array() || list.size() > 100000) throw Error(where + ": \"checkpoint_steps\" must be a list of steps");
    for (const auto& step : list) {
      if (!step.is_number_integer()) throw Error(where + ": \"checkpoint_steps\" must hold integers");
      o.checkpoint_steps.push_back(step.get<int64_t>());
    }
  }
  o.log_every = int_or(j, "log_every", o.log_every, where);
  o.eval_every = int_or(j, "eval_every", 0, where);
  o.eval_sequences = int_or(j, "eval_sequences", o.eval_sequences, where);
  o.device = j.value("device", "cpu");
  o.model_json = j.at("model").dump(2);
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + ": " + e.what());
  }
  o.validate();
  return o;
}

void TrainOptions::validate() const {
  auto positive = [](int64_t value, const char* name) {
    if (value <= 0) throw Error(std::string(name) + " must be positive, got " + std::to_string(value));
  };
  auto non_negative = [](double value, const char* name) {
    if (!(value >= 0) || !std::isfinite(value))
      throw Error(std::string(name) + " must be a finite number >= 0");
  };
  positive(steps, "steps");
  positive(batch_size, "batch size");
  positive(log_every, "log_every");
  positive(eval_sequences, "eval_sequences");
  if (!(lr > 0) || !std::isfinite(lr)) throw Error("the learning rate must be positive");
  if (!(min_lr_ratio >= 0 && min_lr_ratio <= 1)) throw Error("min_lr_ratio must be in [0, 1]");
  if (warmup < 0 || warmup > steps)
    throw Error("warmup (" + std::to_string(warmup) + " steps) must be between 0 and the number of steps (" + std::to_string(steps) + ")");
  if (schedule != "linear" && schedule != "cosine")
    throw Error("unknown schedule " + quoted(schedule) + " (choose linear or cosine)");
  non_negative(weight_decay, "weight decay");
  non_negative(clip, "clip");
  if (!(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1)) throw Error("betas must be in [0, 1)");
  if (!(eps > 0)) throw Error("eps must be positive");
  if (checkpoint_every < 0 || eval_every < 0)
    throw Error("checkpoint and evaluation intervals must be >= 0");
  for (size_t i = 0; i < checkpoint_steps.size(); ++i)
    if (checkpoint_steps[i] < 0 || checkpoint_steps[i] > steps ||
        (i > 0 && checkpoint_steps[i] <= checkpoint_steps[i - 1]))
      throw Error("checkpoint steps must ascend within [0, " + std::to_string(steps) + "], got " +
                  std::to_string(checkpoint_steps[i]));
  if (!loss.empty()) parse_loss_mode(loss);
  parse_block_init(init);
}

double learning_rate(const TrainOptions& o, int64_t step) {
  if (o.warmup > 0 && step <= o.warmup) return o.lr * static_cast<double>(step) / o.warmup;
  const double span = static_cast<double>(std::max<int64_t>(1, o.steps - o.warmup));
  const double progress = std::min(1.0, static_cast<double>(step - o.warmup) / span);
  const double floor = o.lr * o.min_lr_ratio;
  const double shape = o.schedule == "cosine" ? 0.5 * (1.0 + std::cos(M_PI * progress)) : 1.0 - progress;
  return floor + (o.lr - floor) * shape;
}

}  // namespace poslens::train
