// poslens-cli massive-activations: per layer the largest residual-stream entries against the
// median (Sun et al. 2024, arXiv 2402.17762 §2; analysis/massive_activations.h), streamed from one
// forward pass; HDF5 or CSV, and with --figure the curves the GUI draws.
#include <torch/torch.h>

#include <iomanip>
#include <iostream>

#include "analysis/analysis_views.h"
#include "app/cli/analysis_command.h"
#include "app/cli/figure_option.h"
#include "app/cli/figures.h"
#include "core/runtime/model_input.h"
#include "core/runtime/run.h"

namespace poslens::cli {
namespace {

struct MassiveCommand {
  ModelOptions model;
  InputOptions input;
  int64_t top = 10;
  std::string out, figure;
};

void massive(const MassiveCommand& c) {
  auto p = prepare_analysis("massive-activations", c.model, c.input, c.out);
  const auto m = compute_massive_activations(p.model, p.input.ids, c.top, progress_printer("massive-activations"));
  write_result(
      c.out, [&] { return massive_activations_csv(m, p.input.labels); },
      [&](const std::string& out) { write_massive_activations_hdf5(out, m, p.input, export_metadata(p.model)); });
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
  if (m.means.defined())
    std::cout << "means of the massive entries at layer " << m.means_layer << " ("
              << m.means.isnan().logical_not().sum().item<int64_t>() << " dimensions)"
              << (is_csv(c.out) ? "" : ": --intervene massive=mean:" + c.out + " sets them to these") << "\n";
  finish_figure_and_say(
      c.figure,
      [&](const std::string& figure) {
        write_curves_figure(figure, massive_curves(m, checkpoint_name(c.model.checkpoint) + "  largest |h| per layer"));
      },
      c.out);
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
            add_figure_option(cmd, c->figure, "Also write top-1/2/3 and median |h| per layer: .png, .pdf or .svg");
            return cmd;
          },
          [=] { require_input(c->input); }, [=] { massive(*c); }};
}

}  // namespace poslens::cli
