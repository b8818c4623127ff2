// poslens-cli massive-activations, frequency-usage, divergence, length-loss and position-offset:
// analyses streamed from forward passes (docs/analyses.md), written as HDF5 or CSV (by the --out
// suffix) and, with --figure, as the figure the GUI draws.
#include <torch/torch.h>

#include <filesystem>
#include <iomanip>
#include <iostream>

#include "analysis/analysis_files.h"
#include "analysis/analysis_views.h"
#include "analysis/checkpoint_series.h"
#include "analysis/rope_probe.h"
#include "app/cli/command.h"
#include "app/cli/figure_option.h"
#include "app/cli/figures.h"
#include "core/base/atomic_file.h"
#include "core/base/error.h"
#include "core/base/untrusted_json.h"
#include "core/runtime/resources.h"
#include "core/runtime/run.h"

namespace poslens::cli {
namespace {

bool is_csv(const std::string& path) { return std::filesystem::path(path).extension() == ".csv"; }

std::string name_of(const std::string& checkpoint) {
  return std::filesystem::path(checkpoint).filename().string();
}

/// Loads the model and the input, and checks the forward fits before anything runs.
struct Prepared {
  LoadedModel model;
  AnalysisInput input;
};
Prepared prepare(const std::string& what, const ModelOptions& m, const InputOptions& in,
                 const std::string& out, int64_t output_bytes) {
  Prepared p{load_model(m), {}};
  p.input.ids = input_ids(p.model, in);
  p.input.labels = token_labels(p.model, p.input.ids);
  check_resources(what, out, output_bytes,
                  forward_working_bytes(p.model.model->config(), 1, static_cast<int64_t>(p.input.ids.size()),
                                        p.model.model->dtype()));
  return p;
}

struct MassiveCommand {
  ModelOptions model;
  InputOptions input;
  int64_t top = 10;
  std::string out, figure;
};

void massive(const MassiveCommand& c) {
  auto p = prepare("massive-activations", c.model, c.input, c.out, int64_t{1} << 20);
  const auto m = compute_massive_activations(p.model, p.input.ids, c.top, progress_printer("massive-activations"));
  if (is_csv(c.out))
    write_file_atomically(c.out, massive_activations_csv(m, p.input.labels));
  else
    write_massive_activations_hdf5(c.out, m, p.input, export_metadata(p.model));
  // One line per layer: the largest entry against the median, where it sits.
  std::cout << "layer  top |h|    median   ratio  position (token)  dim\n";
  for (int64_t l = 0; l < m.top_values.size(0); ++l) {
    const double top = std::abs(m.top_values[l][0].item<double>()), median = m.median[l].item<double>();
    const int64_t pos = m.top_positions[l][0].item<int64_t>();
    std::cout << std::setw(5) << l << "  " << std::setw(9) << std::setprecision(4) << top << "  "
              << std::setw(7) << median << "  " << std::setw(6) << std::setprecision(3)
              << (median > 0 ? top / median : 0.0) << "  " << pos << " ("
              << display_label(p.input.labels.at(static_cast<size_t>(pos))) << ")  "
              << m.top_dims[l][0].item<int64_t>() << (m.massive[l][0].item<bool>() ? "  massive" : "") << "\n";
  }
  if (!c.figure.empty()) {
    write_curves_figure(c.figure, massive_curves(m, name_of(c.model.checkpoint) + "  largest |h| per layer"));
    std::cout << "wrote " << c.figure << "\n";
  }
  std::cout << "wrote " << c.out << "\n";
}

struct UsageCommand {
  ModelOptions model;
  InputOptions input;
  int layer = 0;
  std::string out, figure;
};

void usage(const UsageCommand& c) {
  auto p = prepare("frequency-usage", c.model, c.input, c.out, int64_t{1} << 20);
  const auto u = compute_frequency_usage(p.model, p.input.ids, progress_printer("frequency-usage"));
  if (c.layer < 0 || c.layer >= u.q_norm.size(0))
    throw Error("--layer " + std::to_string(c.layer) + " is outside 0.." + std::to_string(u.q_norm.size(0) - 1));
  if (is_csv(c.out))
    write_file_atomically(c.out, frequency_usage_csv(u));
  else
    write_frequency_usage_hdf5(c.out, u, p.input, export_metadata(p.model));
  // The layer × frequency summary: per layer, the component each layer's queries use most.
  const auto mean = u.q_layer_mean();
  std::cout << "frequency-usage: " << u.q_norm.size(0) << " layers × " << u.q_norm.size(1) << " heads × "
            << u.q_norm.size(2) << " components (" << to_string(u.rotary.pairing) << " pairs)\n";
  for (int64_t l = 0; l < mean.size(0); ++l) {
    const int64_t top = mean[l].argmax().item<int64_t>();
    std::cout << "  layer " << l << ": largest mean ‖q‖ on component " << top << " (θ = "
              << u.rotary.theta[top].item<double>() << " rad/position), " << std::setprecision(4)
              << mean[l][top].item<double>() << " vs median " << mean[l].median().item<double>() << "\n";
  }
  if (!c.figure.empty()) {
    const auto [heads, layers] = frequency_usage_maps(u, c.layer, name_of(c.model.checkpoint));
    write_map_pair_figure(c.figure, heads, layers);
    std::cout << "wrote " << c.figure << "\n";
  }
  std::cout << "wrote " << c.out << "\n";
}

struct DivergenceCommand {
  ModelOptions model;
  std::string second;
  InputOptions input;
  std::string out, figure;
};

void divergence(const DivergenceCommand& c) {
  auto p = prepare("divergence", c.model, c.input, c.out, int64_t{1} << 20);
  ModelOptions other = c.model;
  other.checkpoint = c.second;
  other.tokenizer.clear();  // its own, to check it reads the text the same way
  const auto second = load_model(other);
  if (!c.input.from_tokens() && second.tokenizer) {
    const auto theirs = input_ids(second, c.input);
    if (theirs != p.input.ids)
      throw Error("the two models tokenize the text differently (" + std::to_string(p.input.ids.size()) + " and " +
                  std::to_string(theirs.size()) + " tokens): compare models that share a tokenizer, or pass --tokens");
  }
  const auto d = compute_pattern_divergence(p.model, second, p.input.ids, progress_printer("divergence"));
  if (is_csv(c.out))
    write_file_atomically(c.out, divergence_csv(d));
  else
    write_divergence_hdf5(c.out, d, p.input, export_metadata(p.model), export_metadata(second));
  const auto flat = d.per_head.flatten();
  const int64_t top = flat.argmax().item<int64_t>(), H = d.per_head.size(1);
  std::cout << "divergence: " << p.input.ids.size() << " tokens; mean JS " << std::setprecision(4)
            << flat.mean().item<double>() << " nats (max ln 2 = 0.693); most changed head L" << top / H << " H"
            << top % H << " (" << flat[top].item<double>() << ")\n";
  if (!c.figure.empty()) {
    const auto [heads, queries] =
        divergence_maps(d, p.input.labels, name_of(c.model.checkpoint) + " vs " + name_of(c.second));
    write_map_pair_figure(c.figure, heads, queries);
    std::cout << "wrote " << c.figure << "\n";
  }
  std::cout << "wrote " << c.out << "\n";
}

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
  if (is_csv(c.out))
    write_file_atomically(c.out, length_loss_csv(curves));
  else
    write_length_loss_hdf5(c.out, curves, L, c.text_file.empty() ? "--text" : c.text_file, export_metadata(first));
  if (!c.figure.empty()) {
    write_curves_figure(c.figure, length_loss_curves(curves, L, "loss per position, T = " + std::to_string(T)));
    std::cout << "wrote " << c.figure << "\n";
  }
  std::cout << "wrote " << c.out << "\n";
}

struct OffsetCommand {
  ModelOptions model;
  InputOptions input;
  int64_t offset = 0;
  int layer = 0, head = 0;
  int64_t pool = 512;
  std::string out, figure;
};

void position_offset(const OffsetCommand& c) {
  auto p = prepare("position-offset", c.model, c.input, c.out, int64_t{1} << 20);
  const auto e = position_offset_effect(p.model, p.input.ids, c.offset, c.layer, c.head, c.pool,
                                        progress_printer("position-offset"));
  if (is_csv(c.out))
    write_file_atomically(c.out, divergence_csv(e.divergence));
  else
    write_position_offset_hdf5(c.out, e, p.input, export_metadata(p.model));
  const auto flat = e.divergence.per_head.flatten();
  std::cout << "position-offset: Δ = " << c.offset << ", " << p.input.ids.size() << " tokens; "
            << p.model.model->position_encoding().describe() << "\n  JS between the patterns at 0 and Δ: mean "
            << std::setprecision(4) << flat.mean().item<double>() << ", max " << flat.max().item<double>()
            << " nats (≈ 0: the model attends by relative position only)\n";
  if (!c.figure.empty()) {
    const auto [before, after] = offset_maps(e, static_cast<int64_t>(p.input.ids.size()), name_of(c.model.checkpoint));
    write_map_pair_figure(c.figure, before, after);
    std::cout << "wrote " << c.figure << "\n";
  }
  std::cout << "wrote " << c.out << "\n";
}

struct HeinsenCommand {
  ModelOptions model;
  InputOptions input;
  std::string out, figure;
};

void heinsen_states(const HeinsenCommand& c) {
  auto p = prepare("heinsen-states", c.model, c.input, c.out, int64_t{1} << 20);
  const auto s = compute_heinsen_states(p.model, p.input.ids);
  if (is_csv(c.out))
    write_file_atomically(c.out, heinsen_states_csv(s, p.input.labels));
  else
    write_heinsen_states_hdf5(c.out, s, p.input, export_metadata(p.model));
  // Per feature: how much of the previous state it keeps (mean p) — near 1 counts far back.
  const auto keep = s.decay.mean(0);
  std::cout << "heinsen-states: " << s.state.size(0) << " positions × " << s.state.size(1)
            << " features; mean decay p per feature: min " << std::setprecision(3) << keep.min().item<double>()
            << ", median " << keep.median().item<double>() << ", max " << keep.max().item<double>() << "\n";
  if (!c.figure.empty()) {
    write_maps_figure(c.figure, heinsen_maps(s, p.input.labels, name_of(c.model.checkpoint)));
    std::cout << "wrote " << c.figure << "\n";
  }
  std::cout << "wrote " << c.out << "\n";
}

}  // namespace

Command heinsen_states_command() {
  auto c = std::make_shared<HeinsenCommand>();
  return {[=](CLI::App& app) {
            auto* cmd = app.add_subcommand(
                "heinsen-states",
                "Heinsen's position states per feature over the input, with the decay probabilities "
                "and logits that update them (Heinsen 2024)");
            add_model_options(cmd, c->model);
            add_input_options(cmd, c->input);
            cmd->add_option("--out", c->out, "Output file: .h5 or .csv")->required();
            add_figure_option(cmd, c->figure, "Also write the three feature × position maps: .png, .pdf or .svg");
            return cmd;
          },
          [=] { require_input(c->input); }, [=] { heinsen_states(*c); }};
}

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

Command position_offset_command() {
  auto c = std::make_shared<OffsetCommand>();
  return {[=](CLI::App& app) {
            auto* cmd = app.add_subcommand(
                "position-offset",
                "Shift every position by Δ and compare the patterns with Δ = 0 (JS per head; a "
                "relative encoding's do not change)");
            add_model_options(cmd, c->model);
            add_input_options(cmd, c->input);
            cmd->add_option("--offset", c->offset, "Δ, added to every position index")
                ->required()
                ->check(CLI::NonNegativeNumber);
            cmd->add_option("--layer", c->layer, "The figure's head: layer")->default_val(0);
            cmd->add_option("--head", c->head, "The figure's head: head")->default_val(0);
            cmd->add_option("--pool", c->pool, "The figure's maps pooled to at most N × N")
                ->default_val(c->pool)
                ->check(CLI::PositiveNumber);
            cmd->add_option("--out", c->out, "Output file: .h5 or .csv (per-head JS)")->required();
            add_figure_option(cmd, c->figure, "Also write the head's two patterns: .png, .pdf or .svg");
            return cmd;
          },
          [=] { require_input(c->input); }, [=] { position_offset(*c); }};
}

Command massive_activations_command() {
  auto c = std::make_shared<MassiveCommand>();
  return {[=](CLI::App& app) {
            auto* cmd = app.add_subcommand(
                "massive-activations",
                "Per layer, the largest residual-stream activations against the median, with their "
                "token and dimension (Sun et al. 2024)");
            add_model_options(cmd, c->model);
            add_input_options(cmd, c->input);
            cmd->add_option("--top", c->top, "Entries kept per layer")->default_val(c->top)->check(CLI::PositiveNumber);
            cmd->add_option("--out", c->out, "Output file: .h5 or .csv")->required();
            add_figure_option(cmd, c->figure, "Also write top-1/2/3 and median |h| per layer: .png, .pdf or .svg");
            return cmd;
          },
          [=] { require_input(c->input); }, [=] { massive(*c); }};
}

Command frequency_usage_command() {
  auto c = std::make_shared<UsageCommand>();
  return {[=](CLI::App& app) {
            auto* cmd = app.add_subcommand(
                "frequency-usage",
                "Mean norm of q and k per head and rotary frequency (Barbero et al. 2024): which "
                "frequencies carry position, which content");
            add_model_options(cmd, c->model);
            add_input_options(cmd, c->input);
            cmd->add_option("--layer", c->layer, "Layer of the figure's head × frequency map")->default_val(0);
            cmd->add_option("--out", c->out, "Output file: .h5 or .csv")->required();
            add_figure_option(cmd, c->figure, "Also write the maps: .png, .pdf or .svg");
            return cmd;
          },
          [=] { require_input(c->input); }, [=] { usage(*c); }};
}

Command divergence_command() {
  auto c = std::make_shared<DivergenceCommand>();
  return {[=](CLI::App& app) {
            auto* cmd = app.add_subcommand(
                "divergence",
                "Row-wise Jensen–Shannon divergence between two models' attention patterns on one "
                "input, per head");
            add_model_options(cmd, c->model);
            cmd->add_option("second", c->second, "The checkpoint to compare with (same layers and heads)")
                ->required();
            add_input_options(cmd, c->input);
            cmd->add_option("--out", c->out, "Output file: .h5 or .csv")->required();
            add_figure_option(cmd, c->figure, "Also write the maps: .png, .pdf or .svg");
            return cmd;
          },
          [=] { require_input(c->input); }, [=] { divergence(*c); }};
}

}  // namespace poslens::cli
