// poslens-cli massive-activations, frequency-usage and divergence: analyses streamed from one
// or two forward passes (docs/analyses.md), written as HDF5 or CSV (by the --out suffix) and,
// with --figure, as the maps the GUI draws.
#include <torch/torch.h>

#include <filesystem>
#include <iomanip>
#include <iostream>

#include "analysis/analysis_files.h"
#include "analysis/analysis_views.h"
#include "app/cli/command.h"
#include "app/cli/figures.h"
#include "core/base/atomic_file.h"
#include "core/base/error.h"
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
  std::string out;
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

}  // namespace

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
            cmd->add_option("--figure", c->figure, "Also write the maps: .png, .pdf or .svg");
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
            cmd->add_option("--figure", c->figure, "Also write the maps: .png, .pdf or .svg");
            return cmd;
          },
          [=] { require_input(c->input); }, [=] { divergence(*c); }};
}

}  // namespace poslens::cli
