#pragma once
// The subcommands of poslens-cli. Each prints to stdout and throws poslens::Error on bad input;
// main.cpp turns errors into one message on stderr and exit code 1.
#include <string>
#include <vector>

#include "core/runtime/checkpoint.h"

namespace poslens::cli {

struct CommonOptions {
  std::string checkpoint;
  std::string tokenizer;
  std::string device = "auto";
  std::string dtype = "float32";
};

/// The load options `common` names (device, dtype, tokenizer).
LoadOptions load_options(const CommonOptions& common);

/// `info`: format, architecture, position encoding, sizes, parameter count, dtype; with
/// `list_hooks` every hook point name too; with `json` the config as JSON.
void info(const CommonOptions& common, bool list_hooks, bool json);

struct RunOptions {
  std::string text;
  std::string tokens;
  bool from_tokens = false;  ///< --tokens given: ids used exactly as given
  std::vector<std::string> captures;  ///< names or globs; empty: every pattern + logits
  std::string out;
  int top_k = 5;  ///< next-token predictions printed for the last position
};
/// `run`: one forward pass, captures written to an HDF5 file.
void run(const CommonOptions& common, const RunOptions& options);

/// `generate`: greedy decoding of `max_new_tokens` tokens after the prompt (BOS alone when
/// the prompt is empty); prints the text.
void generate(const CommonOptions& common, const std::string& prompt, int max_new_tokens);

/// `convert`: writes a Llama-family model as an HF LlamaForCausalLM folder.
void convert(const CommonOptions& common, const std::string& out_dir);

}  // namespace poslens::cli
