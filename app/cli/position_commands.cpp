#include "app/cli/position_commands.h"

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

struct Mapped {
  LoadedModel model;
  PositionMapResult result;
};

std::vector<int64_t> input_ids(const LoadedModel& model, const RunOptions& input) {
  return input.from_tokens ? parse_token_ids(input.tokens, model.model->config().vocab_size)
                           : encode_text(model, input.text);
}

Mapped map_input(const CommonOptions& common, const PositionMapCommand& c) {
  Mapped m{load_checkpoint(common.checkpoint, load_options(common)), {}};
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

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

void position_map(const CommonOptions& common, const PositionMapCommand& command) {
  const auto m = map_input(common, command);
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
                          common.checkpoint);
    std::cout << "wrote " << command.figure << "\n";
  }
}

void heads(const CommonOptions& common, const PositionMapCommand& command) {
  // One forward pass: the metrics need neither the position maps nor the rotary probe.
  const auto model = load_checkpoint(common.checkpoint, load_options(common));
  const auto ids = input_ids(model, command.input);
  const auto metrics = compute_head_metrics(model, ids);
  if (ends_with(command.out, ".csv"))
    write_head_metrics_csv(command.out, metrics);
  else
    write_head_metrics_hdf5(command.out, metrics, ids, token_labels(model, ids),
                            position_methods(model, static_cast<int64_t>(ids.size())),
                            export_metadata(model));
  std::cout << "heads: " << metrics.values.size(0) << " layers × " << metrics.values.size(1)
            << " heads, metrics";
  for (const auto& name : head_metric_names()) std::cout << " " << name;
  std::cout << "\nwrote " << command.out << "\n";
}

}  // namespace poslens::cli
