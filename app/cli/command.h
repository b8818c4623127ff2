#pragma once
// What every poslens-cli subcommand is made of (main.cpp runs them): a Command declares itself
// and its options on the app, checks what CLI11 cannot (exit 2), and runs (poslens::Error:
// exit 1). Commands that run a model on an input share two option groups, "Model"
// (checkpoint, --tokenizer, --device, --dtype) and "Input" (--text or --tokens), so they read
// and behave the same everywhere. Adding a subcommand is its file and one line in
// command_list.cpp (an analysis also has its line in analysis/analysis_registry.cpp).
#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <optional>
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
  /// --intervene values (analysis/interventions.h): load_model() applies them.
  std::vector<std::string> intervene;
};

/// The largest input file (--text-file, --tokens-file, standard input) read: 256 MiB, a few
/// tens of millions of tokens.
inline constexpr std::uint64_t kMaxInputFileBytes = std::uint64_t{256} << 20;

struct InputOptions {
  std::string text;         ///< --text
  std::string tokens;       ///< --tokens
  std::string text_file;    ///< --text-file (UTF-8 text; "-": standard input)
  std::string tokens_file;  ///< --tokens-file (ids as text, or an int .npy; "-": standard input)
  CLI::Option* text_option = nullptr;
  CLI::Option* tokens_option = nullptr;
  CLI::Option* text_file_option = nullptr;
  CLI::Option* tokens_file_option = nullptr;
  /// True when the input is token ids (--tokens or --tokens-file), used exactly as given.
  bool from_tokens() const;

  /// A file's contents, read once (standard input cannot be read twice), by input_ids().
  mutable std::optional<std::string> file_contents;
};

/// The positional checkpoint and the "Model" group: --tokenizer, and --intervene,
/// --device and --dtype when `with_device`.
void add_model_options(CLI::App* cmd, ModelOptions& model, bool with_device = true);
/// The "Input" group, one of: --text (tokenized, BOS first), --tokens (ids as given),
/// --text-file FILE and --tokens-file FILE (the same from a file: inputs longer than one
/// command-line argument, 128 KiB, can hold; "-" reads standard input).
void add_input_options(CLI::App* cmd, InputOptions& input);
/// Throws CLI::RequiredError when no input was given (exit 2).
void require_input(const InputOptions& input);

LoadOptions load_options(const ModelOptions& model);
/// The checkpoint loaded, with model.intervene applied (a model sharing its weights:
/// analysis/interventions.h; a line on stderr says which). Throws poslens::Error.
LoadedModel load_model(const ModelOptions& model);
/// Adds `--intervene` (repeatable) to `group`, bound to `model.intervene`.
void add_intervene_option(CLI::App* group, ModelOptions& model);
/// The input's ids: --tokens / --tokens-file parsed against the vocabulary (ids separated by
/// commas, spaces or line breaks, or a .npy of integers: core/formats/npy.h), or --text /
/// --text-file encoded by the model's tokenizer. Files are read at most once (kMaxInputFileBytes).
/// Throws poslens::Error for an unreadable or oversized file, bad ids or text the model cannot
/// tokenize.
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

/// Every subcommand, in the order --help lists them: one per analysis of the registry
/// (analysis/analysis_registry.h) among them. Throws poslens::Error when an analysis has none.
std::vector<Command> all_commands();

}  // namespace poslens::cli
