// poslens-cli: inspect checkpoints, run them and export captured tensors without a GUI.
// Exit codes: 0 success, 1 bad input or failure (one message on stderr), 2 usage error.
#include <torch/torch.h>

#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>

#include "app/cli/commands.h"
#include "core/base/error.h"

namespace {

void add_common(CLI::App* cmd, poslens::cli::CommonOptions& common, bool with_device) {
  cmd->add_option("checkpoint", common.checkpoint,
                  "llama2.c .bin, .safetensors (config.json beside it) or HF folder")
      ->required();
  cmd->add_option("--tokenizer", common.tokenizer,
                  "llama2.c tokenizer.bin (default: found beside the checkpoint)");
  if (with_device) {
    cmd->add_option("--device", common.device, "cpu, cuda, cuda:N or auto")
        ->capture_default_str();
    cmd->add_option("--dtype", common.dtype, "float32, bfloat16 or float16")
        ->capture_default_str();
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"PosLens command line: inspect transformer checkpoints, run them and export "
               "captured activations (HDF5)."};
  app.set_version_flag("--version", std::string("poslens-cli ") + POSLENS_VERSION);
  app.require_subcommand(1);

  poslens::cli::CommonOptions common;
  bool hooks = false, json = false;
  auto* info = app.add_subcommand("info", "Describe a checkpoint");
  add_common(info, common, false);
  info->add_flag("--hooks", hooks, "Also list every hook point name");
  info->add_flag("--json", json, "Print the model config as JSON");

  poslens::cli::RunOptions run;
  auto* run_cmd = app.add_subcommand("run", "Run one forward pass and write the captures to HDF5");
  add_common(run_cmd, common, true);
  auto* text = run_cmd->add_option("--text", run.text, "Input text (tokenized, BOS first)");
  auto* tokens = run_cmd->add_option("--tokens", run.tokens, "Input token ids, e.g. 1,403,411");
  text->excludes(tokens);
  run_cmd->add_option("--capture", run.captures,
                      "Hook names or globs, comma-separated (default: "
                      "blocks.*.attn.hook_pattern,logits)")
      ->delimiter(',');
  run_cmd->add_option("--out", run.out, "Output HDF5 file")->required();
  run_cmd->add_option("--top-k", run.top_k, "Next-token predictions to print")
      ->capture_default_str();

  std::string prompt;
  int max_new_tokens = 200;
  auto* gen = app.add_subcommand("generate", "Greedy decoding from a prompt (or from BOS)");
  add_common(gen, common, true);
  gen->add_option("--text", prompt, "Prompt (default: start from BOS)");
  gen->add_option("--max-new-tokens", max_new_tokens)->capture_default_str()->check(
      CLI::Range(1, 100000));

  std::string out_dir;
  auto* convert = app.add_subcommand("convert", "Write a Llama-family model as an HF folder");
  add_common(convert, common, false);
  convert->add_option("--out", out_dir, "New folder to create")->required();

  try {
    app.parse(argc, argv);
    run.from_tokens = tokens->count() > 0;
    if (run_cmd->parsed() && text->count() == 0 && !run.from_tokens)
      throw CLI::RequiredError("--text or --tokens");
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }

  at::set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  try {
    if (info->parsed()) poslens::cli::info(common, hooks, json);
    if (run_cmd->parsed()) poslens::cli::run(common, run);
    if (gen->parsed()) poslens::cli::generate(common, prompt, max_new_tokens);
    if (convert->parsed()) poslens::cli::convert(common, out_dir);
  } catch (const poslens::Error& e) {
    std::cerr << "poslens-cli: error: " << e.what() << "\n";
    return 1;
  } catch (const c10::Error& e) {
    std::cerr << "poslens-cli: error: " << e.what_without_backtrace() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "poslens-cli: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
