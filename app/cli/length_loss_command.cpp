// poslens-cli length-loss: the loss at each position of real text up to k·L, per checkpoint and
// per RoPE scaling applied at run time (analysis/length_loss.h; docs/analyses.md);
// HDF5 or CSV, and with --figure the curves with the L, 2L, … markers the GUI draws.
#include <torch/torch.h>

#include <iomanip>
#include <iostream>

#include "analysis/analysis_views.h"
#include "analysis/checkpoint_series.h"
#include "analysis/probe.h"
#include "app/cli/analysis_command.h"
#include "app/cli/figure_option.h"
#include "app/cli/figures.h"
#include "core/base/error.h"
#include "core/base/untrusted_json.h"
#include "core/runtime/resources.h"
#include "core/runtime/run.h"

namespace poslens::cli {
namespace {

struct LengthLossCommand {
  std::vector<std::string> checkpoints;
  ModelOptions model;  ///< --tokenizer, --device, --dtype (the checkpoint itself from the list)
  std::string text, text_file;
  int64_t length = 0;   ///< T; 0: 4 · L
  int64_t windows = 8;  ///< at most; 0: every window
  std::string scalings = "none";
  std::string out, figure;
};

void length_loss(const LengthLossCommand& c) {
  ModelOptions first_options = c.model;
  first_options.checkpoint = c.checkpoints.front();
  const auto first = load_model(first_options);
  const int64_t L = training_length(first.model->config());
  const int64_t T = c.length > 0 ? c.length : 4 * L;
  const std::string text = c.text_file.empty() ? c.text : read_small_file(c.text_file, 64u << 20);
  if (!first.tokenizer) throw Error(c.checkpoints.front() + ": no tokenizer (" + first.tokenizer_note + ")");
  const auto ids = first.tokenizer->encode(text, false);  // BOS goes at the start of each window
  const int64_t bos = first.model->config().bos_token_id;
  std::vector<std::string> scalings;
  for (size_t b = 0, e; b <= c.scalings.size(); b = e + 1) {
    e = c.scalings.find(',', b);
    if (e == std::string::npos) e = c.scalings.size();
    if (e > b) scalings.push_back(c.scalings.substr(b, e - b));
  }
  for (const auto& spec : scalings) rope_scaling_json(spec, L);  // a typo fails before any work
  check_resources("length-loss", c.out, int64_t{1} << 20,
                  forward_working_bytes(first.model->config(), 1, T, first.model->dtype()));
  std::cout << "length-loss: T = " << T << " (L = " << L << "), " << ids.size() << " tokens of text, "
            << c.checkpoints.size() << " checkpoint(s) × " << scalings.size() << " scaling(s)\n" << std::flush;
  std::vector<LossCurve> curves;
  const int64_t total = static_cast<int64_t>(c.checkpoints.size() * scalings.size());
  const auto progress = progress_printer("length-loss");
  for (size_t k = 0; k < c.checkpoints.size(); ++k) {
    ModelOptions options = c.model;
    options.checkpoint = c.checkpoints[k];
    const auto loaded = k == 0 ? LoadedModel{} : load_model(options);
    const auto& model = k == 0 ? first : loaded;
    if (k > 0 && model.tokenizer && model.tokenizer->encode(text, false) != ids)
      throw Error(c.checkpoints[k] + " tokenizes the text differently from " + c.checkpoints[0] +
                  ": compare checkpoints that share a tokenizer");
    for (size_t s = 0; s < scalings.size(); ++s) {
      const int64_t index = static_cast<int64_t>(k * scalings.size() + s);
      const auto part = progress.part(static_cast<double>(index) / total, 1.0 / total);
      const bool plain = scalings[s] == "none";
      const auto scaled = plain ? nullptr : with_rope_scaling(*model.model, rope_scaling_json(scalings[s], L));
      auto curve = per_position_loss(plain ? *model.model : *scaled, ids, T, c.windows, bos, part);
      curve.name = checkpoint_label(c.checkpoints[k]) + (plain ? "" : " · " + scalings[s]);
      // The mean loss over each stretch of L positions: how it grows past the training length.
      std::cout << "  " << curve.name << ":";
      for (int64_t b = 0; b < T - 1; b += L)
        std::cout << " [" << b << "," << std::min(b + L, T - 1) << ") " << std::fixed << std::setprecision(3)
                  << curve.loss.narrow(0, b, std::min(L, T - 1 - b)).mean().item<double>();
      std::cout << std::defaultfloat << "\n";
      curves.push_back(std::move(curve));
    }
  }
  write_result(
      c.out, [&] { return length_loss_csv(curves); },
      [&](const std::string& out) {
        write_length_loss_hdf5(out, curves, L, c.text_file.empty() ? "--text" : c.text_file, export_metadata(first));
      });
  finish_figure_and_say(
      c.figure,
      [&](const std::string& figure) {
        write_curves_figure(figure, length_loss_curves(curves, L, "loss per position, T = " + std::to_string(T)));
      },
      c.out);
}

}  // namespace

Command length_loss_command() {
  auto c = std::make_shared<LengthLossCommand>();
  return {[=](CLI::App& app) {
            auto* cmd = app.add_subcommand(
                "length-loss",
                "Loss at each position of real text up to k·L, per checkpoint and RoPE scaling "
                "applied at run time (length generalisation)");
            cmd->add_option("checkpoints", c->checkpoints, "One or more checkpoints (sharing a tokenizer)")->required();
            auto* group = cmd->add_option_group("Model", "Which tokenizer, device and dtype");
            group->add_option("--tokenizer", c->model.tokenizer, "Tokenizer file (default: found beside the checkpoint)");
            group->add_option("--device", c->model.device, "cpu, cuda, cuda:N or auto")->capture_default_str();
            group->add_option("--dtype", c->model.dtype, "float32, bfloat16 or float16")->capture_default_str();
            add_intervene_option(group, c->model);
            auto* text = cmd->add_option("--text", c->text, "The text");
            auto* file = cmd->add_option("--text-file", c->text_file, "A text file (real text, e.g. Debian's fortunes)");
            text->excludes(file);
            cmd->add_option("--length", c->length, "Window length T (default 4 · L)")->check(CLI::PositiveNumber);
            cmd->add_option("--windows", c->windows, "Windows averaged, at most (0: every window)")
                ->default_val(c->windows)
                ->check(CLI::NonNegativeNumber);
            cmd->add_option("--scaling", c->scalings,
                            "RoPE scalings, comma-separated: none, linear:F, ntk:F, yarn:F, llama3:F")
                ->default_val(c->scalings);
            cmd->add_option("--out", c->out, "Output file: .h5 or .csv")->required();
            add_figure_option(cmd, c->figure, "Also write the curves: .png, .pdf or .svg");
            return cmd;
          },
          [=] {
            if (c->text.empty() && c->text_file.empty())
              throw CLI::RequiredError("--text or --text-file");
          },
          [=] { length_loss(*c); }};
}

}  // namespace poslens::cli
