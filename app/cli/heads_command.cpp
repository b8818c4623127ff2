// poslens-cli heads: entropy, mean distance, sink, previous token and position share of every
// head (analysis/heads.h), streamed from one forward pass: memory stays that of the
// forward whatever T (docs/position-maps.md, docs/performance.md).
#include <torch/torch.h>

#include <iostream>

#include "analysis/heads.h"
#include "analysis/position_export.h"
#include "analysis/position_map.h"
#include "app/cli/analysis_command.h"
#include "core/runtime/run.h"

namespace poslens::cli {
namespace {

struct HeadsCommand {
  ModelOptions model;
  InputOptions input;
  std::string out;  ///< .h5 or .csv
  HeadMetricsOptions metrics;
};

void heads(const HeadsCommand& c) {
  const auto p = prepare_analysis("heads", c.model, c.input, c.out);
  const auto& ids = p.input.ids;
  const int64_t T = static_cast<int64_t>(ids.size());
  const auto metrics = compute_head_metrics(p.model, ids, progress_printer("heads"), c.metrics);
  if (is_csv(c.out))
    write_head_metrics_csv(c.out, metrics);
  else
    write_head_metrics_hdf5(c.out, metrics, ids, p.input.labels, position_methods(p.model, T),
                            export_metadata(p.model));
  std::cout << "heads: " << T << " tokens, " << metrics.values.size(0) << " layers × "
            << metrics.values.size(1) << " heads, metrics";
  for (const auto& name : head_metric_names()) std::cout << " " << name;
  if (!metrics.induction_ids.empty())
    std::cout << "\ninduction measured on " << metrics.induction_ids.size()
              << " tokens (a random sequence repeated, seed " << c.metrics.seed << ")";
  std::cout << "\nwrote " << c.out << "\n";
}

}  // namespace

Command heads_command() {
  auto c = std::make_shared<HeadsCommand>();
  return {[=](CLI::App& app) {
            auto* cmd = app.add_subcommand(
                "heads",
                "Per-head metrics: entropy, mean distance, attention sinks, previous-token, "
                "duplicate-token and induction scores, position share");
            add_model_options(cmd, c->model);
            add_input_options(cmd, c->input);
            cmd->add_option("--out", c->out, "Output file: .h5 or .csv")->required();
            cmd->add_option("--induction-length", c->metrics.induction_length,
                            "Random tokens repeated once for the induction score (0: skip it)")
                ->default_val(c->metrics.induction_length)
                ->check(CLI::NonNegativeNumber);
            cmd->add_option("--seed", c->metrics.seed, "Seed of the induction sequence")
                ->default_val(c->metrics.seed);
            return cmd;
          },
          [=] { require_input(c->input); }, [=] { heads(*c); }};
}

}  // namespace poslens::cli
