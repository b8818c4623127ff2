// poslens-cli divergence: row-wise Jensen–Shannon divergence between two checkpoints' attention
// patterns on one input, per head and per query (analysis/divergence.h), one streamed
// forward pass per model; HDF5 or CSV, and with --figure the two maps the GUI draws.
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

struct DivergenceCommand {
  ModelOptions model;
  std::string second;
  InputOptions input;
  std::string out, figure;
};

void divergence(const DivergenceCommand& c) {
  // --intervene applies to the second model: `divergence M M --intervene X` is X's before/after.
  ModelOptions first = c.model;
  first.intervene.clear();
  auto p = prepare_analysis("divergence", first, c.input, c.out);
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
  write_result(
      c.out, [&] { return divergence_csv(d); },
      [&](const std::string& out) {
        write_divergence_hdf5(out, d, p.input, export_metadata(p.model), export_metadata(second));
      });
  const auto flat = d.per_head.flatten();
  const int64_t top = flat.argmax().item<int64_t>(), H = d.per_head.size(1);
  std::cout << "divergence: " << p.input.ids.size() << " tokens; mean JS " << std::setprecision(4)
            << flat.mean().item<double>() << " nats (max ln 2 = 0.693); most changed head L" << top / H << " H"
            << top % H << " (" << flat[top].item<double>() << ")\n";
  finish_figure_and_say(
      c.figure,
      [&](const std::string& figure) {
        const auto [heads, queries] = divergence_maps(
            d, p.input.labels, checkpoint_name(c.model.checkpoint) + " vs " + checkpoint_name(c.second));
        write_map_pair_figure(figure, heads, queries);
      },
      c.out);
}

}  // namespace

Command divergence_command() {
  auto c = std::make_shared<DivergenceCommand>();
  return {[=](CLI::App& app) {
            auto* cmd = app.add_subcommand(
                "divergence",
                "Row-wise Jensen–Shannon divergence between two models' attention patterns on one "
                "input, per head");
            add_model_options(cmd, c->model);
            cmd->add_option("second", c->second,
                            "The checkpoint to compare with (same layers and heads); --intervene applies to it")
                ->required();
            add_input_options(cmd, c->input);
            cmd->add_option("--out", c->out, "Output file: .h5 or .csv")->required();
            add_figure_option(cmd, c->figure, "Also write the maps: .png, .pdf or .svg");
            return cmd;
          },
          [=] { require_input(c->input); }, [=] { divergence(*c); }};
}

}  // namespace poslens::cli
