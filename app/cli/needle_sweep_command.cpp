// poslens-cli needle-sweep: a needle hidden at K depths of a haystack; per depth the answer's
// loss and the attention mass on the begin / needle / context / end segments per layer and head
// (analysis/needle_sweep.h; docs/analyses.md "needle-sweep"); HDF5 or CSV, the loss-against-depth
// curve as --figure and the mass maps as --maps-figure.
#include <torch/torch.h>

#include <chrono>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "analysis/forward_cost.h"
#include "analysis/needle_sweep.h"
#include "analysis/probe.h"
#include "app/cli/analysis_command.h"
#include "app/cli/figure_option.h"
#include "app/cli/figures.h"
#include "core/base/error.h"
#include "core/runtime/hook_sink.h"
#include "core/runtime/model_input.h"
#include "core/runtime/resources.h"
#include "core/runtime/run.h"

namespace poslens::cli {
namespace {

struct NeedleSweepCommand {
  ModelOptions model;
  InputOptions haystack;
  std::string needle = kPassKeyNeedle, query = kPassKeyQuery, answer = kPassKeyAnswer;
  std::string depths;       ///< "0,0.5,1"; empty: evenly spaced
  int64_t depth_count = 11;
  int64_t length = 0;       ///< T; 0: L, or the whole haystack when it is shorter
  int64_t begin_tokens = 4;
  std::string out, figure, maps_figure;
};

/// "0, 0.25,1" as numbers. Throws poslens::Error naming a bad one.
std::vector<double> parse_depths(const std::string& text) {
  std::vector<double> depths;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    size_t used = 0;
    double d = 0;
    try {
      d = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || item.find_first_not_of(" \t", used) != std::string::npos)
      throw Error("--depths: \"" + item + "\" is not a number (give depths in [0, 1] separated by commas)");
    depths.push_back(d);
  }
  if (depths.empty()) throw Error("--depths: no depth given");
  return depths;
}

void needle_sweep(const NeedleSweepCommand& c) {
  const auto loaded = load_model(c.model);
  auto spec = needle_spec(loaded, input_ids(loaded, c.haystack), c.needle, c.query, c.answer);
  spec.depths = c.depths.empty() ? evenly_spaced_depths(c.depth_count) : parse_depths(c.depths);
  spec.begin_tokens = c.begin_tokens;
  const int64_t whole = spec.fixed_tokens() + static_cast<int64_t>(spec.haystack.size());
  const int64_t L = training_length(loaded.model->config());
  spec.length = c.length > 0 ? c.length : (L > 0 ? std::min(L, whole) : whole);
  for (double d : spec.depths) needle_input(spec, d);  // a bad depth or length fails before any work
  check_resources("needle-sweep", c.out, int64_t{1} << 20,
                  forward_working_bytes(loaded.model->config(), 1, spec.length, loaded.model->dtype()));
  std::cout << "needle-sweep: T = " << spec.length << " (L = " << L << "), needle " << spec.needle.size()
            << " tokens, query " << spec.query.size() << ", answer " << spec.answer.size() << ", "
            << spec.depths.size() << " depths\n"
            << std::flush;
  // What the sweep's cost is a multiple of, measured in the same run.
  const double forward_seconds = plain_forward_seconds(
      *loaded.model, torch::tensor(needle_input(spec, spec.depths.front()).ids, torch::kLong).unsqueeze(0));
  const auto start = std::chrono::steady_clock::now();
  const auto s = compute_needle_sweep(loaded, spec, progress_printer("needle-sweep"));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (size_t k = 0; k < s.depths.size(); ++k)
    std::cout << "  depth " << std::setw(5) << s.depths[k] << ": needle at " << std::setw(6)
              << s.needle_begin[static_cast<int64_t>(k)].item<int64_t>() << ", answer loss " << std::fixed
              << std::setprecision(3) << s.loss[static_cast<int64_t>(k)].item<double>() << " nats, needle mass "
              << s.mass[static_cast<int64_t>(k)].select(2, 1).mean().item<double>() << std::defaultfloat << "\n";
  AnalysisInput first;
  first.ids = needle_input(spec, spec.depths.front()).ids;
  first.labels = token_labels(loaded, first.ids);
  const std::string source = !c.haystack.text_file.empty()     ? c.haystack.text_file
                             : !c.haystack.tokens_file.empty() ? c.haystack.tokens_file
                             : c.haystack.from_tokens()         ? "--tokens"
                                                                : "--text";
  const auto r = needle_sweep_result(s, first, checkpoint_name(c.model.checkpoint), source);
  write_result(
      c.out, [&] { return r.csv; }, [&](const std::string& out) { r.write_hdf5(out, export_metadata(loaded)); });
  std::cout << "needle-sweep: " << r.summary << "\n"
            << "needle-sweep: cost " << std::setprecision(3) << seconds / forward_seconds << "× one forward ("
            << seconds << " s for " << s.depths.size() << " depths; one plain forward of T tokens "
            << forward_seconds << " s)\n";
  if (!c.maps_figure.empty()) {
    write_maps_figure(c.maps_figure, r.maps);
    std::cout << "wrote " << c.maps_figure << "\n";
  }
  finish_figure_and_say(
      c.figure, [&](const std::string& figure) { write_curves_figure(figure, r.curves); }, c.out);
}

}  // namespace

Command needle_sweep_command() {
  auto c = std::make_shared<NeedleSweepCommand>();
  return {[=](CLI::App& app) {
            auto* cmd = app.add_subcommand(
                "needle-sweep",
                "A needle hidden at several depths of a haystack: the answer's loss and the attention mass on "
                "the begin, needle, context and end segments per layer and head (Lost in the Middle)");
            add_model_options(cmd, c->model);
            add_input_options(cmd, c->haystack);
            auto* g = cmd->add_option_group("Needle", "What is hidden, asked and expected");
            g->add_option("--needle", c->needle, "The inserted text")->capture_default_str();
            g->add_option("--query", c->query, "Appended after the haystack")->capture_default_str();
            g->add_option("--answer", c->answer, "The expected continuation; its loss is measured")
                ->capture_default_str();
            auto* depths = g->add_option("--depths", c->depths, "Relative depths in [0, 1], comma-separated");
            g->add_option("--depth-count", c->depth_count, "Evenly spaced depths from 0 to 1")
                ->default_val(c->depth_count)
                ->check(CLI::PositiveNumber)
                ->excludes(depths);
            g->add_option("--length", c->length, "Tokens per input T (default: L, or the whole haystack if shorter)")
                ->check(CLI::PositiveNumber);
            g->add_option("--begin-tokens", c->begin_tokens, "Positions of the begin segment (BOS included)")
                ->default_val(c->begin_tokens)
                ->check(CLI::NonNegativeNumber);
            cmd->add_option("--out", c->out, "Output file: .h5 or .csv")->required();
            add_figure_option(cmd, c->figure, "Also write the loss against depth: .png, .pdf or .svg");
            add_figure_option(cmd, c->maps_figure, "Also write the mass maps: .png, .pdf or .svg", "--maps-figure");
            return cmd;
          },
          [=] { require_input(c->haystack); },
          [=] { needle_sweep(*c); }};
}

}  // namespace poslens::cli
