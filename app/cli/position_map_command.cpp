// poslens-cli position-map: position-only attention beside the real pattern, what CoPE heads
// count, the absolute-PE decomposition (docs/position-maps.md).
#include "app/cli/command.h"

#include <torch/torch.h>

#include <iomanip>
#include <iostream>

#include "analysis/head_metrics.h"
#include "app/cli/figures.h"
#include "analysis/position_export.h"
#include "analysis/position_map.h"
#include "core/base/error.h"
#include "core/runtime/run.h"

namespace poslens::cli {
namespace {

struct PositionMapCommand {
  ModelOptions model;
  InputOptions input;
  int64_t probe_samples = 64;  ///< rotary models: tokens of the U-shape probe (0: all)
  uint64_t seed = 0;
  std::string out;
  std::string figure;          ///< pattern | position-only map of (layer, head)
  int layer = 0, head = 0;
};

struct Mapped {
  LoadedModel model;
  PositionMapResult result;
};

Mapped map_input(const PositionMapCommand& c) {
  Mapped m{load_model(c.model), {}};
  const auto& cfg = m.model.model->config();
  if (!c.figure.empty() && (c.layer >= cfg.n_layers || c.head >= cfg.n_heads))
    throw Error("--layer/--head: the model has " + std::to_string(cfg.n_layers) + " layers of " +
                std::to_string(cfg.n_heads) + " heads, got layer " + std::to_string(c.layer) +
                ", head " + std::to_string(c.head));
  const auto ids = input_ids(m.model, c.input);
  PositionMapOptions options;
  options.probe_samples = c.probe_samples;
  options.seed = c.seed;
  m.result = poslens::position_map(m.model, ids, options);
  return m;
}

/// A token as a readable quoted label (display_label: "\n" shown as ↵, spaces as ␣).
std::string quoted_label(const LoadedModel& model, int64_t id) {
  return "\"" + display_label(token_labels(model, {id})[0]) + "\"";
}

void position_map(const PositionMapCommand& command) {
  const auto m = map_input(command);
  write_position_map_hdf5(command.out, m.result, export_metadata(m.model));
  const auto& r = m.result;
  std::cout << "position-map: " << r.ids.size() << " tokens, method " << r.methods.front()
            << "\n  " << r.explanation << "\n";
  if (r.cope) {
    // Per layer and head, the token the head counts most (highest mean gate).
    const auto& c = *r.cope;
    std::cout << "CoPE: token with the highest mean gate per head\n";
    for (int64_t l = 0; l < c.mean_gate_per_token.size(0); ++l) {
      std::cout << "  layer " << l << ":";
      for (int64_t h = 0; h < c.mean_gate_per_token.size(1); ++h) {
        const int64_t t = c.mean_gate_per_token[l][h].argmax().item<int64_t>();
        std::cout << "  H" << h << " " << quoted_label(m.model, c.token_ids[t]) << " "
                  << std::fixed << std::setprecision(2)
                  << c.mean_gate_per_token[l][h][t].item<float>();
      }
      std::cout << "\n";
    }
  }
  if (r.absolute) std::cout << "absolute-PE terms of layer 0 written (/analysis/absolute_terms)\n";
  std::cout << "wrote " << command.out << "\n";
  if (!command.figure.empty()) {
    write_position_figure(command.figure, r, m.model.model->config(), command.layer, command.head,
                          command.model.checkpoint);
    std::cout << "wrote " << command.figure << "\n";
  }
}

}  // namespace

Command position_map_command() {
  auto c = std::make_shared<PositionMapCommand>();
  return {[=](CLI::App& app) {
            auto* cmd = app.add_subcommand(
                "position-map", "Position-only attention beside the real pattern, CoPE counting, "
                                "absolute-PE terms (docs/position-maps.md)");
            add_model_options(cmd, c->model);
            add_input_options(cmd, c->input);
            cmd->add_option("--probe-samples", c->probe_samples,
                            "Rotary models: tokens of the U-shape probe behind the map (0: all)")
                ->capture_default_str()
                ->check(CLI::NonNegativeNumber);
            cmd->add_option("--seed", c->seed, "Seed of the probe's tokens")->capture_default_str();
            cmd->add_option("--out", c->out, "Output HDF5 file")->required();
            cmd->add_option("--figure", c->figure,
                            "Also write head --layer/--head's pattern | position-only map (.png, .pdf or .svg)");
            cmd->add_option("--layer", c->layer, "Layer of the figure")->capture_default_str()
                ->check(CLI::NonNegativeNumber);
            cmd->add_option("--head", c->head, "Head of the figure")->capture_default_str()
                ->check(CLI::NonNegativeNumber);
            return cmd;
          },
          [=] { require_input(c->input); }, [=] { position_map(*c); }};
}

}  // namespace poslens::cli
