// poslens-cli frequency-usage: mean norm of q and k per head and rotary component (Barbero et al.
// 2024, arXiv 2410.06205; analysis/frequency_usage.h), streamed from one forward pass; HDF5 or
// CSV, and with --figure the head × frequency and layer × frequency maps the GUI draws.
#include <torch/torch.h>

#include <iomanip>
#include <iostream>

#include "analysis/analysis_views.h"
#include "app/cli/analysis_command.h"
#include "app/cli/figure_option.h"
#include "app/cli/figures.h"
#include "core/base/error.h"
#include "core/runtime/run.h"

namespace poslens::cli {
namespace {

struct UsageCommand {
  ModelOptions model;
  InputOptions input;
  int layer = 0;
  std::string out, figure;
};

void usage(const UsageCommand& c) {
  auto p = prepare_analysis("frequency-usage", c.model, c.input, c.out);
  const auto u = compute_frequency_usage(p.model, p.input.ids, progress_printer("frequency-usage"));
  if (c.layer < 0 || c.layer >= u.q_norm.size(0))
    throw Error("--layer " + std::to_string(c.layer) + " is outside 0.." + std::to_string(u.q_norm.size(0) - 1));
  write_result(
      c.out, [&] { return frequency_usage_csv(u); },
      [&](const std::string& out) { write_frequency_usage_hdf5(out, u, p.input, export_metadata(p.model)); });
  // The layer × frequency summary: per layer, the component each layer's queries use most.
  const auto mean = u.q_layer_mean();
  std::cout << "frequency-usage: " << u.q_norm.size(0) << " layers × " << u.q_norm.size(1) << " heads × "
            << u.q_norm.size(2) << " components (" << to_string(u.rotary.pairing) << " pairs)\n"
            << decoupled_rope_note(p.model.model->config());
  for (int64_t l = 0; l < mean.size(0); ++l) {
    if (mean[l].isnan().all().item<bool>()) {
      std::cout << "  layer " << l << ": " << p.model.model->config().layer_type(l) << ", not rotated (left empty)\n";
      continue;
    }
    // The layer's own components (a prefix: Gemma 4's local layers have fewer) and θ.
    const auto own = mean[l].masked_select(mean[l].isnan().logical_not());
    const int64_t top = own.argmax().item<int64_t>();
    const auto rotary = p.model.model->position_encoding(static_cast<int>(l)).rotary_info(static_cast<int64_t>(p.input.ids.size()));
    const double theta = (rotary ? rotary->theta : u.rotary.theta)[top].item<double>();
    std::cout << "  layer " << l << ": largest mean ‖q‖ on component " << top << " (θ = " << theta
              << " rad/position), " << std::setprecision(4) << own[top].item<double>() << " vs median "
              << own.median().item<double>() << "\n";
  }
  finish_figure_and_say(
      c.figure,
      [&](const std::string& figure) {
        const auto [heads, layers] = frequency_usage_maps(u, c.layer, checkpoint_name(c.model.checkpoint));
        write_map_pair_figure(figure, heads, layers);
      },
      c.out);
}

}  // namespace

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

}  // namespace poslens::cli
