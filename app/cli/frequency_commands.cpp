#include "app/cli/frequency_commands.h"

#include <torch/torch.h>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>

#include "analysis/frequency_export.h"
#include "analysis/probe_compare.h"
#include "analysis/rope_frequencies.h"
#include "analysis/rope_probe.h"
#include "analysis/text_decomposition.h"
#include "app/cli/figures.h"
#include "core/base/error.h"
#include "core/runtime/run.h"

namespace poslens::cli {
namespace {

ProbeOptions probe_options(const ProbeCommand& c) {
  ProbeOptions o;
  o.length = c.length;
  if (c.samples != "all") {
    std::size_t used = 0;
    long long n = 0;
    try {
      n = std::stoll(c.samples, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != c.samples.size() || n < 1)
      throw Error("--samples must be a positive count or \"all\", got \"" + c.samples + "\"");
    o.samples = n;
  }
  o.seed = c.seed;
  o.batch = c.batch;
  o.bos_id = c.bos;
  o.train_length = c.train_length;
  return o;
}

/// "probe: 128/509 samples" on stderr, in place on a terminal.
std::function<bool(int64_t, int64_t)> progress_printer(const std::string& what) {
  const bool tty = ::isatty(2) != 0;
  auto last = std::make_shared<int64_t>(-1);
  return [=](int64_t done, int64_t total) {
    if (done == *last) return true;
    *last = done;
    if (tty) {
      std::cerr << "\r" << what << ": " << done << "/" << total << " samples" << std::flush;
      if (done == total) std::cerr << "\n";
    } else if (done == total) {
      std::cerr << what << ": " << total << " samples\n";
    }
    return true;
  };
}

/// Per layer: the components with the highest VAF, activated ones starred.
void print_vaf(const ProbeResult& p) {
  if (p.vaf.size(1) == 0) {
    std::cout << "no rotary components (the model does not rotate q and k): scores only\n";
    return;
  }
  const auto lambda = wavelengths(p.theta);
  std::cout << "activated band (pi/L, 2pi/L) with L=" << p.L << ": components";
  for (int64_t c = 0; c < p.activated.size(0); ++c)
    if (p.activated[c].item<bool>()) std::cout << " " << c;
  std::cout << "\n";
  for (int64_t l = 0; l < p.vaf.size(0); ++l) {
    const auto v = p.vaf[l].nan_to_num(-1e9);
    const auto order = v.argsort(/*dim=*/0, /*descending=*/true);
    std::cout << "layer " << l << " VAF (head mean), top:";
    for (int64_t i = 0; i < std::min<int64_t>(4, order.size(0)); ++i) {
      const int64_t c = order[i].item<int64_t>();
      std::cout << "  c" << c << (p.activated[c].item<bool>() ? "*" : "") << " "
                << std::fixed << std::setprecision(1) << p.vaf[l][c].item<float>() << "%"
                << " (wavelength " << std::setprecision(0) << lambda[c].item<double>() << ")";
    }
    std::cout << "\n";
  }
}

}  // namespace

void probe(const CommonOptions& common, const ProbeCommand& command) {
  const auto options = probe_options(command);
  const auto model = load_checkpoint(common.checkpoint, load_options(common));
  const auto start = std::chrono::steady_clock::now();
  const auto result = run_probe(model, options, progress_printer("probe"));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::optional<ProbeResult> extrapolation;
  if (command.extrapolate > 0) {
    if (command.extrapolate <= command.length)
      throw Error("--extrapolate must be longer than --length");
    ProbeOptions longer = options;
    longer.length = command.extrapolate;
    longer.tokens = result.tokens;
    extrapolation = run_probe(model, longer, progress_printer("extrapolation probe"));
  }
  write_probe_hdf5(command.out, result, options.seed, options.samples == 0,
                   export_metadata(model), extrapolation ? &*extrapolation : nullptr);
  if (!command.figure.empty())
    write_probe_figure(command.figure, result, model.path,
                       extrapolation ? &*extrapolation : nullptr);
  std::cout << "probe: T=" << result.T << ", " << result.n_samples << " samples ("
            << (options.samples == 0 ? "every non-special token" : "random, seed " +
                                                                         std::to_string(options.seed))
            << "), " << std::fixed << std::setprecision(2) << seconds << " s, "
            << std::setprecision(1) << result.n_samples / std::max(seconds, 1e-9)
            << " samples/s\n";
  print_vaf(result);
  std::cout << "wrote " << command.out << (command.figure.empty() ? "" : " and " + command.figure)
            << "\n";
}

void frequencies(const CommonOptions& common, const FrequenciesCommand& command) {
  const auto model = load_checkpoint(common.checkpoint, load_options(common));
  const auto ids = command.input.from_tokens
                       ? parse_token_ids(command.input.tokens, model.model->config().vocab_size)
                       : encode_text(model, command.input.text);
  const auto d = decompose_text(model, ids, command.layer, command.head, command.train_length);
  write_frequencies_hdf5(command.out, d, export_metadata(model));
  if (!command.figure.empty()) write_frequencies_figure(command.figure, d, model.path);
  std::cout << "frequencies: layer " << d.layer << ", "
            << (d.head < 0 ? std::string("every head") : "head " + std::to_string(d.head)) << ", "
            << ids.size() << " tokens, " << d.components.size(1) << " components ("
            << d.pairing << " pairs)\nwrote " << command.out
            << (command.figure.empty() ? "" : " and " + command.figure) << "\n";
}

void compare(const CommonOptions& common, const CompareCommand& command) {
  const auto options = probe_options(command.probe);
  const auto paths =
      command.series.empty() ? command.checkpoints : series_checkpoints(command.series);
  const auto result =
      compare_checkpoints(paths, load_options(common), options, progress_printer("compare"));
  write_compare_hdf5(command.probe.out, result, result.meta);
  if (!command.probe.figure.empty()) write_compare_figure(command.probe.figure, result);
  std::cout << "compare: " << paths.size() << " checkpoints, T=" << result.probes[0].T << ", "
            << result.probes[0].n_samples << " samples each\n";
  for (size_t i = 0; i < paths.size(); ++i) {
    std::cout << "  " << paths[i] << " (step " << result.steps[i] << "): layer-0 VAF of activated";
    const auto& p = result.probes[i];
    bool any = false;
    for (int64_t c = 0; c < p.activated.size(0); ++c)
      if (p.activated[c].item<bool>()) {
        std::cout << " c" << c << " " << std::fixed << std::setprecision(1)
                  << p.vaf[0][c].item<float>() << "%";
        any = true;
      }
    std::cout << (any ? "" : " (none in the band)") << "\n";
  }
  std::cout << "wrote " << command.probe.out
            << (command.probe.figure.empty() ? "" : " and " + command.probe.figure) << "\n";
}

}  // namespace poslens::cli
