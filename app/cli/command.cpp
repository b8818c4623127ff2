#include "app/cli/command.h"

#include <unistd.h>

#include <iostream>
#include <memory>

#include "core/runtime/run.h"

namespace poslens::cli {

void add_model_options(CLI::App* cmd, ModelOptions& model, bool with_device) {
  cmd->add_option("checkpoint", model.checkpoint,
                  "llama2.c .bin, .safetensors (config.json beside it) or HF folder")
      ->required();
  auto* group = cmd->add_option_group("Model", "Which tokenizer, device and dtype");
  group->add_option("--tokenizer", model.tokenizer,
                    "tokenizer.json, tokenizer.model, vocab.json (+ merges.txt) or llama2.c "
                    "tokenizer.bin (default: found beside the checkpoint)");
  if (with_device) {
    group->add_option("--device", model.device, "cpu, cuda, cuda:N or auto")->capture_default_str();
    group->add_option("--dtype", model.dtype, "float32, bfloat16 or float16")->capture_default_str();
  }
}

void add_input_options(CLI::App* cmd, InputOptions& input) {
  auto* group = cmd->add_option_group("Input", "What the model reads (one of them)");
  input.text_option = group->add_option("--text", input.text, "Input text (tokenized, BOS first)");
  input.tokens_option = group->add_option("--tokens", input.tokens, "Input token ids, e.g. 1,403,411");
  input.text_option->excludes(input.tokens_option);
}

void require_input(const InputOptions& input) {
  if (input.text_option->count() == 0 && input.tokens_option->count() == 0)
    throw CLI::RequiredError("--text or --tokens");
}

LoadOptions load_options(const ModelOptions& model) {
  LoadOptions options;
  options.device = model.device;
  options.dtype = model.dtype;
  options.tokenizer = model.tokenizer;
  return options;
}

LoadedModel load_model(const ModelOptions& model) {
  return load_checkpoint(model.checkpoint, load_options(model));
}

std::vector<int64_t> input_ids(const LoadedModel& model, const InputOptions& input) {
  return input.from_tokens() ? parse_token_ids(input.tokens, model.model->config().vocab_size)
                             : encode_text(model, input.text);
}

Progress progress_printer(const std::string& what) {
  const bool tty = ::isatty(2) != 0;
  auto shown = std::make_shared<int>(-1);
  return Progress([=](double fraction, const std::string& stage) {
    const int percent = static_cast<int>(fraction * 100.0);
    if (percent == *shown) return true;
    *shown = percent;
    const std::string name = stage.empty() ? what : what + " (" + stage + ")";
    if (tty) {
      std::cerr << "\r" << name << ": " << percent << "%   " << std::flush;
      if (percent == 100) std::cerr << "\n";
    } else if (percent == 100) {
      std::cerr << what << ": done\n";
    }
    return true;
  });
}

}  // namespace poslens::cli
