// poslens-cli heinsen-states: Heinsen's position states per feature over the input, with the
// decay probabilities and logits that update them (Heinsen 2024; analysis/heinsen_states.h);
// HDF5 or CSV, and with --figure the three feature × position maps the GUI draws.
#include <torch/torch.h>

#include <iomanip>
#include <iostream>

#include "analysis/analysis_views.h"
#include "app/cli/analysis_command.h"
#include "app/cli/figure_option.h"
#include "app/cli/figures.h"
#include "core/runtime/run.h"

namespace poslens::cli {
namespace {

struct HeinsenCommand {
  ModelOptions model;
  InputOptions input;
  std::string out, figure;
};

void heinsen_states(const HeinsenCommand& c) {
  auto p = prepare_analysis("heinsen-states", c.model, c.input, c.out);
  const auto s = compute_heinsen_states(p.model, p.input.ids);
  write_result(
      c.out, [&] { return heinsen_states_csv(s, p.input.labels); },
      [&](const std::string& out) { write_heinsen_states_hdf5(out, s, p.input, export_metadata(p.model)); });
  // Per feature: how much of the previous state it keeps (mean p) — near 1 counts far back.
  const auto keep = s.decay.mean(0);
  std::cout << "heinsen-states: " << s.state.size(0) << " positions × " << s.state.size(1)
            << " features; mean decay p per feature: min " << std::setprecision(3) << keep.min().item<double>()
            << ", median " << keep.median().item<double>() << ", max " << keep.max().item<double>() << "\n";
  finish_figure_and_say(
      c.figure,
      [&](const std::string& figure) {
        write_maps_figure(figure, heinsen_maps(s, p.input.labels, checkpoint_name(c.model.checkpoint)));
      },
      c.out);
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

}  // namespace poslens::cli
