#include "app/cli/command.h"

#include <unistd.h>

#include <iostream>
#include <memory>
#include <string>

#include "analysis/interventions.h"
#include "core/base/error.h"
#include "core/base/untrusted_json.h"
#include "core/formats/npy.h"
#include "core/runtime/model_input.h"

namespace poslens::cli {

void add_model_options(CLI::App* cmd, ModelOptions& model, bool with_device) {
  cmd->add_option("checkpoint", model.checkpoint,
                  "llama2.c .bin, .safetensors (config.json beside it) or HF folder")
      ->required();
  auto* group = cmd->add_option_group("Model", "Which tokenizer, device and dtype");
  group->add_option("--tokenizer", model.tokenizer,
                    "tokenizer.json, tokenizer.model, vocab.json (+ merges.txt) or llama2.c "
                    "tokenizer.bin (default: found beside the checkpoint)");
  if (with_device) {  // not for info and convert, which describe or write the checkpoint itself
    add_intervene_option(group, model);
    group->add_option("--device", model.device, "cpu, cuda, cuda:N or auto")->capture_default_str();
    group->add_option("--dtype", model.dtype, "float32, bfloat16 or float16")->capture_default_str();
  }
}

void add_input_options(CLI::App* cmd, InputOptions& input) {
  auto* group = cmd->add_option_group("Input", "What the model reads (one of them)");
  input.text_option = group->add_option("--text", input.text, "Input text (tokenized, BOS first)");
  input.tokens_option = group->add_option("--tokens", input.tokens, "Input token ids, e.g. 1,403,411");
  input.text_file_option =
      group->add_option("--text-file", input.text_file, "Input text from a UTF-8 file (- : standard input)");
  input.tokens_file_option = group->add_option(
      "--tokens-file", input.tokens_file,
      "Input token ids from a file: separated by commas, spaces or lines, or an int .npy (- : standard input)");
  // At most one of them ("--text excludes --tokens"); require_input asks for one.
  const std::vector<CLI::Option*> all{input.text_option, input.tokens_option, input.text_file_option,
                                      input.tokens_file_option};
  for (size_t i = 0; i < all.size(); ++i)
    for (size_t j = i + 1; j < all.size(); ++j) all[i]->excludes(all[j]);  // both ways
}

void require_input(const InputOptions& input) {
  for (const auto* o : {input.text_option, input.tokens_option, input.text_file_option, input.tokens_file_option})
    if (o && o->count() > 0) return;
  throw CLI::RequiredError("--text, --tokens, --text-file or --tokens-file");
}

bool InputOptions::from_tokens() const {
  return (tokens_option && tokens_option->count() > 0) || (tokens_file_option && tokens_file_option->count() > 0);
}

namespace {

bool given(const CLI::Option* option) { return option && option->count() > 0; }

/// A file's whole contents, or standard input's for "-", at most kMaxInputFileBytes.
std::string read_input_file(const std::string& path) {
  if (path != "-") return read_small_file(path, kMaxInputFileBytes);
  std::string text;
  char buffer[1 << 16];
  while (std::cin.read(buffer, sizeof buffer) || std::cin.gcount() > 0) {
    text.append(buffer, static_cast<size_t>(std::cin.gcount()));
    if (text.size() > kMaxInputFileBytes)
      throw Error("standard input: more than " + std::to_string(kMaxInputFileBytes >> 20) + " MiB of input");
  }
  return text;
}

bool is_npy(const std::string& path) {
  return path.size() > 4 && path.compare(path.size() - 4, 4, ".npy") == 0;
}

}  // namespace

std::vector<int64_t> input_ids(const LoadedModel& model, const InputOptions& input) {
  const int64_t vocab = model.model->config().vocab_size;
  if (given(input.tokens_file_option) && is_npy(input.tokens_file)) {
    auto ids = read_npy_integers(input.tokens_file, kMaxInputFileBytes);
    if (ids.empty()) throw Error(input.tokens_file + ": holds no token ids");
    for (const auto id : ids)
      if (id < 0 || id >= vocab)
        throw Error(input.tokens_file + ": token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                    std::to_string(vocab) + ")");
    return ids;
  }
  const bool file = given(input.text_file_option) || given(input.tokens_file_option);
  if (file && !input.file_contents)
    input.file_contents = read_input_file(given(input.text_file_option) ? input.text_file : input.tokens_file);
  if (input.from_tokens()) {
    const auto& ids = file ? *input.file_contents : input.tokens;
    try {
      return parse_token_ids(ids, vocab);
    } catch (const Error& e) {
      if (!file) throw;
      throw Error(input.tokens_file + ": " + e.what());
    }
  }
  return encode_text(model, file ? *input.file_contents : input.text);
}

LoadOptions load_options(const ModelOptions& model) {
  LoadOptions options;
  options.device = model.device;
  options.dtype = model.dtype;
  options.tokenizer = model.tokenizer;
  return options;
}

void add_intervene_option(CLI::App* group, ModelOptions& model) {
  group->add_option("--intervene", model.intervene,
                    "Run with an intervention (repeatable): p-rope=P (the lowest fraction P of RoPE's "
                    "frequencies unrotated), temperature=LxHy:T or temperature=Lx:T (logits / T), no-sinks, "
                    "mask-first-key (key 0 hidden from every later query), massive=zero (massive activations zeroed "
                    "where they first appear), massive=mean:FILE (set to the means a massive-activations file holds)");
}

LoadedModel load_model(const ModelOptions& model) {
  const auto interventions = parse_interventions(model.intervene);  // a typo fails before the load
  auto loaded = load_checkpoint(model.checkpoint, load_options(model));
  if (!interventions.empty()) {
    loaded.model = intervened_model(*loaded.model, interventions);
    std::cerr << "poslens-cli: running " << model.checkpoint << " with interventions: " << interventions.describe()
              << "\n";
  }
  return loaded;
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
