// poslens-cli position-offset: every position index shifted by Δ, the patterns compared with
// Δ = 0 (JS per head and query; analysis/position_offset.h): a relative encoding's do not
// change. HDF5 or CSV, and with --figure the chosen head's two patterns.
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

struct OffsetCommand {
  ModelOptions model;
  InputOptions input;
  int64_t offset = 0;
  int layer = 0, head = 0;
  int64_t pool = 512;
  std::string out, figure;
};

void position_offset(const OffsetCommand& c) {
  auto p = prepare_analysis("position-offset", c.model, c.input, c.out);
  const auto e = position_offset_effect(p.model, p.input.ids, c.offset, c.layer, c.head, c.pool,
                                        progress_printer("position-offset"));
  write_result(
      c.out, [&] { return divergence_csv(e.divergence); },
      [&](const std::string& out) { write_position_offset_hdf5(out, e, p.input, export_metadata(p.model)); });
  const auto flat = e.divergence.per_head.flatten();
  std::cout << "position-offset: Δ = " << c.offset << ", " << p.input.ids.size() << " tokens; "
            << p.model.model->position_encoding().describe() << "\n  JS between the patterns at 0 and Δ: mean "
            << std::setprecision(4) << flat.mean().item<double>() << ", max " << flat.max().item<double>()
            << " nats (≈ 0: the model attends by relative position only)\n";
  finish_figure_and_say(
      c.figure,
      [&](const std::string& figure) {
        const auto [before, after] =
            offset_maps(e, static_cast<int64_t>(p.input.ids.size()), checkpoint_name(c.model.checkpoint));
        write_map_pair_figure(figure, before, after);
      },
      c.out);
}

}  // namespace

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

}  // namespace poslens::cli
