// poslens-cli probe, frequencies, compare and u-shape: the RoPE frequency analyses
// (docs/frequencies.md) written as HDF5 (/analysis/probe, /analysis/frequencies,
// /analysis/compare, /analysis/u_shape) and, with --figure, as the figure the GUI's Frequencies
// panel draws (u-shape: the curves of several models, any encoding).
#include "app/cli/command.h"

#include <torch/torch.h>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>

#include "analysis/frequency_export.h"
#include "analysis/compare.h"
#include "analysis/rope_frequencies.h"
#include "analysis/probe.h"
#include "analysis/text_decomposition.h"
#include "analysis/checkpoint_series.h"
#include "analysis/u_shape.h"
#include "app/cli/analysis_command.h"
#include "app/cli/figure_option.h"
#include "app/cli/figures.h"
#include "core/base/error.h"
#include "core/runtime/run.h"

namespace poslens::cli {
namespace {

struct ProbeCommand {
  int64_t length = 0;          ///< T
  std::string samples = "all"; ///< "all" or a count
  uint64_t seed = 0;
  int64_t batch = 0;           ///< 0: automatic
  int64_t bos = -1;            ///< -1: the model's
  int64_t train_length = 0;    ///< L; 0: from the checkpoint
  int64_t extrapolate = 0;     ///< a second probe at this longer T (0: none)
  std::string out;
  std::string figure;
  int figure_layer = 0;        ///< the layer the figure draws
};

struct FrequenciesCommand {
  InputOptions input;
  int layer = 0;
  int head = -1;     ///< -1: every head
  int64_t train_length = 0;
  std::string out;
  std::string figure;
};

struct CompareCommand {
  std::vector<std::string> checkpoints;
  std::string series;  ///< a run folder (its step-* checkpoints) instead of checkpoints
  bool difference = false;  ///< the figure: curves and VAF minus the first checkpoint's
  ProbeCommand probe;
};

ProbeOptions probe_options(const ProbeCommand& c) {
  ProbeOptions o;
  o.length = c.length;
  if (c.samples != "all") {
    std::size_t used = 0;
    long long n = 0;
    try {
      n = std::stoll(c.samples, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != c.samples.size() || n < 1)
      throw Error("--samples must be a positive count or \"all\", got \"" + c.samples + "\"");
    o.samples = n;
  }
  o.seed = c.seed;
  o.batch = c.batch;
  o.bos_id = c.bos;
  o.train_length = c.train_length;
  return o;
}

/// Per layer: the components with the highest VAF, activated ones starred.
void print_vaf(const ProbeResult& p) {
  if (p.vaf.size(1) == 0) {
    std::cout << "no rotary components (the model does not rotate q and k): scores only\n";
    return;
  }
  std::cout << "activated band (pi/L, 2pi/L) with L=" << p.L << ": components";
  for (int64_t c = 0; c < p.activated.size(0); ++c)
    if (p.activated[c].item<bool>()) std::cout << " " << c;
  std::cout << (p.theta_per_layer.defined() ? " (global layers; each layer's own below)\n" : "\n");
  for (int64_t l = 0; l < p.vaf.size(0); ++l) {
    const auto [theta, activated] = layer_theta(p, l);  // the layer's own θ_c where layers differ
    const auto lambda = wavelengths(theta);
    const auto v = p.vaf[l].nan_to_num(-1e9);
    const auto order = v.argsort(/*dim=*/0, /*descending=*/true);
    std::cout << "layer " << l << " VAF (head mean), top:";
    for (int64_t i = 0; i < std::min<int64_t>(4, order.size(0)); ++i) {
      const int64_t c = order[i].item<int64_t>();
      std::cout << "  c" << c << (activated[c].item<bool>() ? "*" : "") << " "
                << std::fixed << std::setprecision(1) << p.vaf[l][c].item<float>() << "%"
                << " (wavelength " << std::setprecision(0) << lambda[c].item<double>() << ")";
    }
    std::cout << "\n";
  }
}

/// `probe`: the U-shape probe with its per-component curves and VAF.
void probe(const ModelOptions& common, const ProbeCommand& command) {
  const auto options = probe_options(command);
  const auto model = load_model(common);
  const auto start = std::chrono::steady_clock::now();
  const auto result = run_probe(model, options, progress_printer("probe").counter());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::optional<ProbeResult> extrapolation;
  if (command.extrapolate > 0) {
    if (command.extrapolate <= command.length)
      throw Error("--extrapolate must be longer than --length");
    ProbeOptions longer = options;
    longer.length = command.extrapolate;
    longer.tokens = result.tokens;
    extrapolation = run_probe(model, longer, progress_printer("extrapolation probe").counter());
  }
  write_probe_hdf5(command.out, result, options.seed, options.samples == 0,
                   export_metadata(model), extrapolation ? &*extrapolation : nullptr);
  if (!command.figure.empty())
    write_probe_figure(command.figure, result, model.path,
                       extrapolation ? &*extrapolation : nullptr, command.figure_layer);
  std::cout << "probe: T=" << result.T << ", " << result.n_samples << " samples ("
            << (options.samples == 0 ? "every non-special token" : "random, seed " +
                                                                         std::to_string(options.seed))
            << "), " << std::fixed << std::setprecision(2) << seconds << " s, "
            << std::setprecision(1) << result.n_samples / std::max(seconds, 1e-9)
            << " samples/s\n"
            << decoupled_rope_note(model.model->config());
  print_vaf(result);
  std::cout << "wrote " << command.out << (command.figure.empty() ? "" : " and " + command.figure)
            << "\n";
}

/// `frequencies`: the decomposition of one layer's real scores on the input.
void frequencies(const ModelOptions& common, const FrequenciesCommand& command) {
  const auto model = load_model(common);
  const auto ids = input_ids(model, command.input);
  const auto d = decompose_text(model, ids, command.layer, command.head, command.train_length);
  write_frequencies_hdf5(command.out, d, export_metadata(model));
  if (!command.figure.empty()) write_frequencies_figure(command.figure, d, model.path);
  std::cout << "frequencies: layer " << d.layer << ", "
            << (d.head < 0 ? std::string("every head") : "head " + std::to_string(d.head)) << ", "
            << ids.size() << " tokens, " << d.components.size(1) << " components ("
            << d.pairing << " pairs)\nwrote " << command.out
            << (command.figure.empty() ? "" : " and " + command.figure) << "\n";
}

/// `u-shape`: the probe's head-mean curve per layer of several models of any encoding.
void u_shape(const ModelOptions& common, const CompareCommand& command) {
  const auto u = compare_u_shapes(command.checkpoints, load_options(common), probe_options(command.probe),
                                  progress_printer("u-shape").counter());
  write_u_shape_hdf5(command.probe.out, u);
  if (!command.probe.figure.empty())
    write_curves_figure(command.probe.figure,
                        u_shape_curves(u, -1, "U-shape probe at T = " + std::to_string(u.T) + ", " +
                                                  std::to_string(u.n_samples) + " tokens (Chen et al. 2024 Fig. 1)"));
  const auto minimum = u_shape_minimum_position(u);
  std::cout << "u-shape: T=" << u.T << ", " << u.n_samples << " samples per model; where each layer's head-mean "
            << "curve is lowest (0: key 1, a global decay; 1: key T-1):\n";
  for (size_t m = 0; m < u.checkpoints.size(); ++m) {
    std::cout << "  " << checkpoint_label(u.checkpoints[m]) << " (" << u.encodings[m] << "):";
    for (int64_t l = 0; l < minimum.size(1); ++l)
      std::cout << " L" << l << " " << std::fixed << std::setprecision(2) << minimum[static_cast<int64_t>(m)][l].item<double>();
    std::cout << "\n";
  }
  std::cout << "wrote " << command.probe.out
            << (command.probe.figure.empty() ? "" : " and " + command.probe.figure) << "\n";
}

/// `compare`: the probe on two or more checkpoints; VAF per component against step.
void compare(const ModelOptions& common, const CompareCommand& command) {
  const auto options = probe_options(command.probe);
  const auto paths =
      command.series.empty() ? command.checkpoints : series_checkpoints(command.series);
  const auto result =
      compare_checkpoints(paths, load_options(common), options, progress_printer("compare").counter());
  write_compare_hdf5(command.probe.out, result, result.meta);
  if (!command.probe.figure.empty())
    write_compare_figure(command.probe.figure, result, command.difference, command.probe.figure_layer);
  std::cout << "compare: " << paths.size() << " checkpoints, T=" << result.probes[0].T << ", "
            << result.probes[0].n_samples << " samples each\n";
  for (size_t i = 0; i < paths.size(); ++i) {
    std::cout << "  " << paths[i] << " (step " << result.steps[i] << "): layer-0 VAF of activated";
    const auto& p = result.probes[i];
    bool any = false;
    for (int64_t c = 0; c < p.activated.size(0); ++c)
      if (p.activated[c].item<bool>()) {
        std::cout << " c" << c << " " << std::fixed << std::setprecision(1)
                  << p.vaf[0][c].item<float>() << "%";
        any = true;
      }
    std::cout << (any ? "" : " (none in the band)") << "\n";
  }
  std::cout << "wrote " << command.probe.out
            << (command.probe.figure.empty() ? "" : " and " + command.probe.figure) << "\n";
}

void add_probe_options(CLI::App* cmd, ProbeCommand& p) {
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
  add_figure_option(cmd, p.figure, "Also write the figure (.png, .pdf or .svg)");
  cmd->add_option("--figure-layer", p.figure_layer, "The layer the figure draws (u-shape: every layer)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
}

/// --tokenizer, --device and --dtype of commands that take their checkpoints as a list.
void add_model_group(CLI::App* cmd, ModelOptions& model) {
  auto* group = cmd->add_option_group("Model", "Which tokenizer, device and dtype");
  group->add_option("--tokenizer", model.tokenizer, "Tokenizer file (default: found beside)");
  group->add_option("--device", model.device, "cpu, cuda, cuda:N or auto")->capture_default_str();
  group->add_option("--dtype", model.dtype, "float32, bfloat16 or float16")->capture_default_str();
}

}  // namespace

Command probe_command() {
  auto model = std::make_shared<ModelOptions>();
  auto c = std::make_shared<ProbeCommand>();
  return {[=](CLI::App& app) {
            auto* cmd = app.add_subcommand(
                "probe", "U-shape probe: [BOS] + one token repeated; last query's logit to every "
                         "key, per rotary component, with VAF (docs/frequencies.md)");
            add_model_options(cmd, *model);
            add_probe_options(cmd, *c);
            cmd->add_option("--extrapolate", c->extrapolate,
                            "Also probe at this longer T (same tokens): "
                            "/analysis/probe_extrapolation, drawn over the curves")
                ->check(CLI::Range(int64_t{3}, int64_t{1} << 20));
            return cmd;
          },
          {}, [=] { probe(*model, *c); }};
}

Command frequencies_command() {
  auto model = std::make_shared<ModelOptions>();
  auto c = std::make_shared<FrequenciesCommand>();
  return {[=](CLI::App& app) {
            auto* cmd = app.add_subcommand(
                "frequencies", "Split one layer's attention scores on the input by rotary component");
            add_model_options(cmd, *model);
            add_input_options(cmd, c->input);
            cmd->add_option("--layer", c->layer, "Layer")->capture_default_str()->check(CLI::NonNegativeNumber);
            cmd->add_option("--head", c->head, "One head (default: every head)")->check(CLI::NonNegativeNumber);
            cmd->add_option("--train-length", c->train_length, "L (default: from the checkpoint)")
                ->check(CLI::PositiveNumber);
            cmd->add_option("--out", c->out, "Output HDF5 file")->required();
            add_figure_option(cmd, c->figure, "Also write the figure (.png, .pdf or .svg)");
            return cmd;
          },
          [=] { require_input(c->input); }, [=] { frequencies(*model, *c); }};
}

Command compare_command() {
  auto model = std::make_shared<ModelOptions>();
  auto c = std::make_shared<CompareCommand>();
  return {[=](CLI::App& app) {
            auto* cmd = app.add_subcommand(
                "compare", "The probe on several checkpoints: VAF per component against training step");
            cmd->add_option("checkpoints", c->checkpoints, "Two or more checkpoints");
            cmd->add_flag("--difference", c->difference,
                          "The figure draws every curve and VAF minus the first checkpoint's");
            cmd->add_option("--series", c->series, "A run folder: its step-NNNNNN checkpoints")
                ->check(CLI::ExistingDirectory);
            add_model_group(cmd, *model);
            add_probe_options(cmd, c->probe);
            return cmd;
          },
          [=] {
            if (c->series.empty() == c->checkpoints.empty())
              throw CLI::ValidationError("compare", "give two or more checkpoints or --series FOLDER");
            if (c->series.empty() && c->checkpoints.size() < 2)
              throw CLI::ValidationError("compare", "needs at least two checkpoints");
          },
          [=] { compare(*model, *c); }};
}

Command u_shape_command() {
  auto model = std::make_shared<ModelOptions>();
  auto c = std::make_shared<CompareCommand>();
  return {[=](CLI::App& app) {
            auto* cmd = app.add_subcommand(
                "u-shape", "The probe on models of any position encoding: each layer's head-mean logit "
                           "against key position, overlaid (Chen et al. 2024 Fig. 1)");
            cmd->add_option("checkpoints", c->checkpoints, "Two or more checkpoints of one depth")->required();
            add_model_group(cmd, *model);
            add_probe_options(cmd, c->probe);
            return cmd;
          },
          [=] {
            if (c->checkpoints.size() < 2) throw CLI::ValidationError("u-shape", "needs at least two checkpoints");
          },
          [=] { u_shape(*model, *c); }};
}

}  // namespace poslens::cli
