// poslens-cli position-map: position-only attention beside the real pattern, what CoPE heads
// count, the absolute-PE decomposition (docs/position-maps.md).
#include "app/cli/command.h"

#include <torch/torch.h>

#include <algorithm>
#include <iomanip>
#include <iostream>

#include "analysis/heads.h"
#include "app/cli/figure_option.h"
#include "app/cli/figures.h"
#include "analysis/position_export.h"
#include "analysis/position_map.h"
#include "core/base/error.h"
#include "core/runtime/resources.h"
#include "core/runtime/model_input.h"

namespace poslens::cli {
namespace {

struct PositionMapCommand {
  ModelOptions model;
  InputOptions input;
  int64_t probe_samples = 64;  ///< rotary models: tokens of the U-shape probe (0: all)
  uint64_t seed = 0;
  std::string heads;           ///< "L.H,...": maps of these heads only (default: every head)
  int64_t pool = 0;            ///< > 0: maps max-pooled to at most pool × pool
  std::string out;
  std::string figure;          ///< pattern | position-only map of (layer, head)
  int layer = 0, head = 0;
};

/// A token as a readable quoted label (display_label: "\n" shown as ↵, spaces as ␣).
std::string quoted_label(const LoadedModel& model, int64_t id) {
  return "\"" + display_label(token_labels(model, {id})[0]) + "\"";
}

bool contains(const HeadSelection& heads, int layer, int head) {
  return std::find(heads.begin(), heads.end(), std::pair<int, int>{layer, head}) != heads.end();
}

void position_map(const PositionMapCommand& c) {
  const auto model = load_model(c.model);
  const auto& cfg = model.model->config();
  const bool figure = !c.figure.empty();
  if (figure && (c.layer >= cfg.n_layers || c.head >= cfg.n_heads))
    throw Error("--layer/--head: the model has " + std::to_string(cfg.n_layers) + " layers of " +
                std::to_string(cfg.n_heads) + " heads, got layer " + std::to_string(c.layer) +
                ", head " + std::to_string(c.head));
  const auto ids = input_ids(model, c.input);
  const int64_t T = static_cast<int64_t>(ids.size());
  std::optional<HeadSelection> heads;
  if (!c.heads.empty()) heads = parse_head_selection(c.heads, cfg.n_layers, cfg.n_heads);
  // The figure's head is mapped too, written only when selected.
  auto mapped = heads;
  if (mapped && figure && !contains(*mapped, c.layer, c.head)) mapped->emplace_back(c.layer, c.head);

  const auto method = position_methods(model, T).front();
  const int64_t bytes = PositionMapFile::estimate_bytes(cfg, T, heads, c.pool, method);
  // The forward's working memory, and the probe's batches (1 GB budget, probe.cpp).
  const int64_t memory = forward_working_bytes(cfg, 1, T, model.model->dtype()) +
                         (method.find("rotary") != std::string::npos ? int64_t{1} << 30 : 0);
  std::cout << "position-map: " << T << " tokens, method " << method << ", "
            << (heads ? std::to_string(heads->size()) + " heads" : "every head")
            << (c.pool > 0 ? ", maps max-pooled to " + std::to_string(c.pool) : "")
            << (method.find("rotary") != std::string::npos
                    ? ", probe of " + (c.probe_samples ? std::to_string(c.probe_samples) : std::string("every")) +
                          " tokens at T=" + std::to_string(T)
                    : "")
            << ": up to " << gigabytes(bytes) << " to " << c.out << ", about " << gigabytes(memory)
            << " of memory beside the weights\n";
  check_resources("position-map", c.out, bytes, memory);

  PositionMapFile file(c.out, model, T, heads, c.pool);
  PooledPositionMaps figure_maps(T, 1024);
  PositionMapOptions options;
  options.probe_samples = c.probe_samples;
  options.seed = c.seed;
  const auto r = poslens::position_map(
      model, ids, options, mapped,
      [&](const PositionMapBlock& b) {
        if (!heads || contains(*heads, b.layer, b.head)) file.add(b);
        if (figure && b.layer == c.layer && b.head == c.head) figure_maps.add(b);
      },
      progress_printer("position-map"));
  file.finish(r);

  std::cout << "  " << r.explanation << "\n";
  if (r.cope) {
    // Per layer and head, the token the head counts most (highest mean gate).
    const auto& counting = *r.cope;
    std::cout << "CoPE: token with the highest mean gate per head\n";
    for (int64_t l = 0; l < counting.mean_gate_per_token.size(0); ++l) {
      std::cout << "  layer " << l << ":";
      for (int64_t h = 0; h < counting.mean_gate_per_token.size(1); ++h) {
        const int64_t t = counting.mean_gate_per_token[l][h].argmax().item<int64_t>();
        std::cout << "  H" << h << " " << quoted_label(model, counting.token_ids[t]) << " "
                  << std::fixed << std::setprecision(2)
                  << counting.mean_gate_per_token[l][h][t].item<float>();
      }
      std::cout << "\n";
    }
  }
  if (method == "absolute") std::cout << "absolute-PE terms of layer 0 written (/analysis/absolute_terms)\n";
  if (cfg.attention_sinks) std::cout << "the learned sink's share of each row written (/analysis/sink_share)\n";
  std::cout << "wrote " << c.out << "\n";
  if (figure) {
    write_position_figure(c.figure, figure_maps.find(PositionMapKind::Pattern, c.layer, c.head),
                          figure_maps.find(PositionMapKind::PositionOnly, c.layer, c.head), r.labels,
                          c.layer, c.head, method, c.model.checkpoint,
                          figure_maps.find(PositionMapKind::SinkShare, c.layer, c.head));
    std::cout << "wrote " << c.figure << "\n";
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
            cmd->add_option("--heads", c->heads,
                            "Maps of these heads only, LAYER.HEAD comma-separated (e.g. 5.3,0.1)");
            cmd->add_option("--pool", c->pool, "Max-pool the maps to at most N × N cells")
                ->check(CLI::PositiveNumber);
            cmd->add_option("--out", c->out, "Output HDF5 file")->required();
            add_figure_option(cmd, c->figure,
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
