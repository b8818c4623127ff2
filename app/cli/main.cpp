// poslens-cli: inspect checkpoints, run them and export captured tensors without a GUI.
// Exit codes: 0 success, 1 bad input or failure (one message on stderr), 2 usage error.
#include <torch/torch.h>

#include <iostream>

#include <CLI/CLI.hpp>

#include "core/base/compute_setup.h"
#include "app/cli/commands.h"
#include "app/cli/frequency_commands.h"
#include "app/cli/position_commands.h"
#include "app/cli/tokenize_command.h"
#include "app/cli/train_commands.h"
#include "core/base/error.h"

namespace {

void add_common(CLI::App* cmd, poslens::cli::CommonOptions& common, bool with_device) {
  cmd->add_option("checkpoint", common.checkpoint,
                  "llama2.c .bin, .safetensors (config.json beside it) or HF folder")
      ->required();
  cmd->add_option("--tokenizer", common.tokenizer,
                  "tokenizer.json, tokenizer.model, vocab.json (+ merges.txt) or llama2.c "
                  "tokenizer.bin (default: found beside the checkpoint)");
  if (with_device) {
    cmd->add_option("--device", common.device, "cpu, cuda, cuda:N or auto")
        ->capture_default_str();
    cmd->add_option("--dtype", common.dtype, "float32, bfloat16 or float16")
        ->capture_default_str();
  }
}

CLI::App* add_train_command(CLI::App& app, poslens::cli::TrainCommand& c) {
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
  cmd->add_option("--log-every", o.log_every, "Steps per log line")->capture_default_str();
  cmd->add_option("--eval-every", o.eval_every, "Steps between evaluations (0: at the end)")
      ->capture_default_str();
  cmd->add_option("--eval-sequences", o.eval_sequences, "Sequences per split when evaluating")
      ->capture_default_str();
  cmd->add_option("--device", o.device, "cpu, cuda, cuda:N or auto")->capture_default_str();
  return cmd;
}

/// A new run needs --task, --model and --out; --resume takes nothing but --device.
void check_train_command(const CLI::App& cmd, poslens::cli::TrainCommand& c) {
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

CLI::App* add_eval_command(CLI::App& app, poslens::cli::EvalCommand& c) {
  auto* cmd = app.add_subcommand("eval", "Test error (%) of a trained model on each split of its task");
  cmd->add_option("checkpoint", c.checkpoint, "Model folder (e.g. a run's step-001500)")->required();
  cmd->add_option("--task", c.task, "Task (default: the one stored in the checkpoint)");
  cmd->add_option("--task-option", c.task_options, "Task parameter KEY=VALUE (repeatable)");
  cmd->add_option("--length", c.length, "Sequence length (default: the stored one)");
  cmd->add_option("--split", c.splits, "Split(s) to evaluate (default: all)")->delimiter(',');
  cmd->add_option("--n", c.n, "Sequences per split")->capture_default_str()->check(CLI::Range(1, 10000000));
  cmd->add_option("--device", c.device, "cpu, cuda, cuda:N or auto")->capture_default_str();
  cmd->add_option("--dtype", c.dtype, "float32, bfloat16 or float16")->capture_default_str();
  return cmd;
}

void add_probe_options(CLI::App* cmd, poslens::cli::ProbeCommand& p) {
  cmd->add_option("--length", p.length, "T: tokens per sample, BOS included")
      ->required()
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 20));
  cmd->add_option("--samples", p.samples,
                  "\"all\" (every non-special token once: the exact expectation) or a count "
                  "of random tokens")
      ->capture_default_str();
  cmd->add_option("--seed", p.seed, "Seed of the random tokens")->capture_default_str();
  cmd->add_option("--batch", p.batch, "Samples per forward pass (default: from the model size)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--bos", p.bos, "BOS id (default: the tokenizer's or the config's)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--train-length", p.train_length,
                  "L for the activated band (default: from the checkpoint)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--out", p.out, "Output HDF5 file")->required();
  cmd->add_option("--figure", p.figure, "Also write the figure (.png, .pdf or .svg)");
}

void add_extrapolation_option(CLI::App* cmd, poslens::cli::ProbeCommand& p) {
  cmd->add_option("--extrapolate", p.extrapolate,
                  "Also probe at this longer T (same tokens): /analysis/probe_extrapolation, "
                  "drawn over the curves")
      ->check(CLI::Range(int64_t{3}, int64_t{1} << 20));
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

  poslens::cli::TrainCommand train;
  auto* train_cmd = add_train_command(app, train);
  poslens::cli::EvalCommand eval;
  auto* eval_cmd = add_eval_command(app, eval);

  poslens::cli::ProbeCommand probe;
  auto* probe_cmd = app.add_subcommand(
      "probe", "U-shape probe: [BOS] + one token repeated; last query's logit to every key, "
               "per rotary component, with VAF (docs/frequencies.md)");
  add_common(probe_cmd, common, true);
  add_probe_options(probe_cmd, probe);
  add_extrapolation_option(probe_cmd, probe);

  poslens::cli::FrequenciesCommand freq;
  auto* freq_cmd = app.add_subcommand(
      "frequencies", "Split one layer's attention scores on the input by rotary component");
  add_common(freq_cmd, common, true);
  auto* freq_text = freq_cmd->add_option("--text", freq.input.text, "Input text (BOS first)");
  auto* freq_tokens = freq_cmd->add_option("--tokens", freq.input.tokens, "Input token ids");
  freq_text->excludes(freq_tokens);
  freq_cmd->add_option("--layer", freq.layer, "Layer")->capture_default_str()->check(CLI::NonNegativeNumber);
  freq_cmd->add_option("--head", freq.head, "One head (default: every head)")->check(CLI::NonNegativeNumber);
  freq_cmd->add_option("--train-length", freq.train_length, "L (default: from the checkpoint)")
      ->check(CLI::PositiveNumber);
  freq_cmd->add_option("--out", freq.out, "Output HDF5 file")->required();
  freq_cmd->add_option("--figure", freq.figure, "Also write the figure (.png, .pdf or .svg)");

  poslens::cli::CompareCommand cmp;
  auto* cmp_cmd = app.add_subcommand(
      "compare", "The probe on several checkpoints: VAF per component against training step");
  cmp_cmd->add_option("checkpoints", cmp.checkpoints, "Two or more checkpoints");
  cmp_cmd->add_option("--series", cmp.series, "A run folder: its step-NNNNNN checkpoints")
      ->check(CLI::ExistingDirectory);
  cmp_cmd->add_option("--tokenizer", common.tokenizer, "Tokenizer file (default: found beside)");
  cmp_cmd->add_option("--device", common.device, "cpu, cuda, cuda:N or auto")->capture_default_str();
  cmp_cmd->add_option("--dtype", common.dtype, "float32, bfloat16 or float16")->capture_default_str();
  add_probe_options(cmp_cmd, cmp.probe);

  poslens::cli::PositionMapCommand pmap;
  auto* pmap_cmd = app.add_subcommand(
      "position-map", "Position-only attention beside the real pattern, CoPE counting, "
                      "absolute-PE terms (docs/position-maps.md)");
  auto* heads_cmd = app.add_subcommand(
      "heads", "Per-head metrics: entropy, mean distance, sink, previous token, position share");
  std::vector<std::pair<CLI::Option*, CLI::Option*>> pmap_inputs;
  for (auto* cmd : {pmap_cmd, heads_cmd}) {
    add_common(cmd, common, true);
    auto* t = cmd->add_option("--text", pmap.input.text, "Input text (BOS first)");
    auto* k = cmd->add_option("--tokens", pmap.input.tokens, "Input token ids");
    t->excludes(k);
    pmap_inputs.emplace_back(t, k);
    cmd->add_option("--probe-samples", pmap.probe_samples,
                    "Rotary models: tokens of the U-shape probe behind the map (0: all)")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--seed", pmap.seed, "Seed of the probe's tokens")->capture_default_str();
  }
  pmap_cmd->add_option("--out", pmap.out, "Output HDF5 file")->required();
  pmap_cmd->add_option("--figure", pmap.figure,
                       "Also write head --layer/--head's pattern | position-only map (.png, .pdf or .svg)");
  pmap_cmd->add_option("--layer", pmap.layer, "Layer of the figure")->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  pmap_cmd->add_option("--head", pmap.head, "Head of the figure")->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  heads_cmd->add_option("--out", pmap.out, "Output file: .h5 or .csv")->required();

  poslens::cli::TokenizeCommand tok;
  auto* tok_cmd = app.add_subcommand(
      "tokenize", "Text to token ids (or --decode ids to text) with a tokenizer file or a "
                  "checkpoint's tokenizer (docs/tokenizers.md)");
  tok_cmd->add_option("path", tok.path,
                      "tokenizer.json, tokenizer.model, vocab.json, tokenizer.bin, or a checkpoint")
      ->required();
  auto* tok_text = tok_cmd->add_option("--text", tok.text, "Text to encode");
  auto* tok_decode = tok_cmd->add_option("--decode", tok.decode, "Comma-separated ids to decode");
  tok_text->excludes(tok_decode);
  tok_cmd->add_flag("--json", tok.json, "Print {\"ids\", \"tokens\", \"offsets\"} (byte offsets)");
  tok_cmd->add_flag("--no-special", tok.no_special,
                    "Leave out the special tokens the tokenizer adds (BOS, template)");

  try {
    app.parse(argc, argv);
    if (tok_cmd->parsed() && tok_text->count() == 0 && tok_decode->count() == 0)
      throw CLI::RequiredError("--text or --decode");
    for (size_t i = 0; i < pmap_inputs.size(); ++i) {
      auto* cmd = i == 0 ? pmap_cmd : heads_cmd;
      if (!cmd->parsed()) continue;
      if (pmap_inputs[i].first->count() == 0 && pmap_inputs[i].second->count() == 0)
        throw CLI::RequiredError("--text or --tokens");
      pmap.input.from_tokens = pmap_inputs[i].second->count() > 0;
    }
    if (freq_cmd->parsed() && freq_text->count() == 0 && freq_tokens->count() == 0)
      throw CLI::RequiredError("--text or --tokens");
    freq.input.from_tokens = freq_tokens->count() > 0;
    if (cmp_cmd->parsed()) {
      if (cmp.series.empty() == cmp.checkpoints.empty())
        throw CLI::ValidationError("compare", "give two or more checkpoints or --series FOLDER");
      if (cmp.series.empty() && cmp.checkpoints.size() < 2)
        throw CLI::ValidationError("compare", "needs at least two checkpoints");
    }
    if (train_cmd->parsed()) check_train_command(*train_cmd, train);
    run.from_tokens = tokens->count() > 0;
    if (run_cmd->parsed() && text->count() == 0 && !run.from_tokens)
      throw CLI::RequiredError("--text or --tokens");
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }

  poslens::set_up_compute();
  try {
    if (info->parsed()) poslens::cli::info(common, hooks, json);
    if (run_cmd->parsed()) poslens::cli::run(common, run);
    if (gen->parsed()) poslens::cli::generate(common, prompt, max_new_tokens);
    if (convert->parsed()) poslens::cli::convert(common, out_dir);
    if (train_cmd->parsed()) poslens::cli::train(train);
    if (eval_cmd->parsed()) poslens::cli::eval(eval);
    if (probe_cmd->parsed()) poslens::cli::probe(common, probe);
    if (freq_cmd->parsed()) poslens::cli::frequencies(common, freq);
    if (cmp_cmd->parsed()) poslens::cli::compare(common, cmp);
    if (pmap_cmd->parsed()) poslens::cli::position_map(common, pmap);
    if (heads_cmd->parsed()) poslens::cli::heads(common, pmap);
    if (tok_cmd->parsed()) poslens::cli::tokenize(tok);
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
