#pragma once
// What every poslens-cli subcommand is made of (main.cpp runs them): a Command declares itself
// and its options on the app, checks what CLI11 cannot (exit 2), and runs (poslens::Error:
// exit 1). Commands that run a model on an input share two option groups, "Model"
// (checkpoint, --tokenizer, --device, --dtype) and "Input" (--text or --tokens), so they read
// and behave the same everywhere. Adding a subcommand is its file and one line in
// command_list.cpp.
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "analysis/progress.h"
#include "core/runtime/checkpoint.h"

namespace poslens::cli {

struct ModelOptions {
  std::string checkpoint;
  std::string tokenizer;
  std::string device = "auto";
  std::string dtype = "float32";
};

struct InputOptions {
  std::string text;
  std::string tokens;
  CLI::Option* text_option = nullptr;
  CLI::Option* tokens_option = nullptr;
  bool from_tokens() const { return tokens_option && tokens_option->count() > 0; }
};

/// The positional checkpoint and the "Model" group: --tokenizer, and --device/--dtype when
/// `with_device`.
void add_model_options(CLI::App* cmd, ModelOptions& model, bool with_device = true);
/// The "Input" group: --text (tokenized, BOS first) or --tokens (ids as given).
void add_input_options(CLI::App* cmd, InputOptions& input);
/// Throws CLI::RequiredError when neither --text nor --tokens was given (exit 2).
void require_input(const InputOptions& input);

LoadOptions load_options(const ModelOptions& model);
LoadedModel load_model(const ModelOptions& model);
/// The input's ids: --tokens parsed against the vocabulary, or --text encoded.
std::vector<int64_t> input_ids(const LoadedModel& model, const InputOptions& input);

/// Progress on stderr as "what: 42%", rewritten in place on a terminal; one "what: done" line
/// otherwise (logs stay short).
Progress progress_printer(const std::string& what);

struct Command {
  /// Declares the subcommand and its options on `app` (binding them to the command's state).
  std::function<CLI::App*(CLI::App& app)> add;
  /// After parsing, when the subcommand was given: checks across options. Throws CLI errors.
  std::function<void()> check;
  /// Runs it. Throws poslens::Error (and c10::Error) on failure.
  std::function<void()> run;
};

/// Every subcommand, in the order --help lists them.
std::vector<Command> all_commands();

}  // namespace poslens::cli
