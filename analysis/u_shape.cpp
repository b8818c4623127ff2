#include "analysis/u_shape.h"

#include <torch/torch.h>

#include <cmath>

#include "analysis/analysis_registry.h"
#include "analysis/checkpoint_series.h"
#include "analysis/csv_text.h"
#include "core/base/error.h"
#include "core/runtime/run.h"

namespace poslens {

UShapes compare_u_shapes(const std::vector<std::string>& paths, const LoadOptions& load, ProbeOptions options,
                         const std::function<bool(int64_t, int64_t)>& progress) {
  if (paths.size() < 2) throw Error("u-shape: give two or more checkpoints to compare");
  options.per_component = false;
  UShapes u;
  std::vector<at::Tensor> scores;
  const auto n = static_cast<int64_t>(paths.size());
  for (int64_t m = 0; m < n; ++m) {
    const auto model = load_checkpoint(paths[static_cast<size_t>(m)], load);
    // The first model's tokens go to every model (options.tokens below): the content is fixed.
    const auto result = run_probe(model, options, [&](int64_t done, int64_t total) {
      return !progress || progress(m * total + done, n * total);
    });
    if (m == 0) {
      options.tokens = result.tokens;
      u.T = result.T;
      u.n_samples = result.n_samples;
      u.meta = export_metadata(model);
    }
    const auto mean = result.scores.to(torch::kDouble).mean(1);  // [layer, key_pos]
    if (m > 0 && mean.sizes() != scores.front().sizes())
      throw Error("u-shape: " + paths[static_cast<size_t>(m)] + " has " + std::to_string(mean.size(0)) +
                  " layers, " + paths.front() + " " + std::to_string(scores.front().size(0)) +
                  ": compare models of one depth");
    scores.push_back(mean);
    u.checkpoints.push_back(paths[static_cast<size_t>(m)]);
    u.encodings.push_back(model.model->position_encoding().describe());
    u.weights_sha256.push_back(model.weights_sha256);
  }
  u.scores = torch::stack(scores);
  return u;
}

CurveSet u_shape_curves(const UShapes& u, int layer, const std::string& title) {
  const int64_t layers = u.scores.size(1);
  if (layer < -1 || layer >= layers)
    throw Error("u-shape: layer " + std::to_string(layer) + " is outside 0.." + std::to_string(layers - 1));
  CurveSet set;
  set.title = title;
  set.x_label = "key position (query at " + std::to_string(u.T - 1) + "; the BOS key 0 not drawn)";
  set.y_label = "logit, standardised per curve (head mean)";
  for (int64_t k = 0; k < u.T; ++k) set.x.push_back(static_cast<double>(k));
  const int64_t first = layer < 0 ? 0 : layer, end = layer < 0 ? layers : layer + 1;
  for (int64_t m = 0; m < u.scores.size(0); ++m) {
    for (int64_t l = first; l < end; ++l) {
      const auto curve = u.scores[m][l].contiguous();
      // BOS (key 0) is a sink whose logit dwarfs the rest in many models: the statistics leave it out.
      const auto rest = curve.narrow(0, 1, u.T - 1);
      const double mean = rest.mean().item<double>();
      const double sd = rest.std(/*unbiased=*/false).item<double>();
      const double* raw = curve.data_ptr<double>();
      std::vector<double> y(static_cast<size_t>(u.T));
      for (int64_t k = 0; k < u.T; ++k) y[static_cast<size_t>(k)] = sd > 0 ? (raw[k] - mean) / sd : 0.0;
      y[0] = NAN;  // not drawn: tens of standard deviations away, it would flatten every curve
      set.names.push_back(checkpoint_label(u.checkpoints[static_cast<size_t>(m)]) + " (" +
                          u.encodings[static_cast<size_t>(m)] + ") L" + std::to_string(l));
      set.y.push_back(std::move(y));
      set.colour.push_back(static_cast<int>(m));
      set.dash.push_back(static_cast<int>(l));
    }
  }
  return set;
}

at::Tensor u_shape_minimum_position(const UShapes& u) {
  const auto keys = u.scores.narrow(2, 1, u.T - 1);
  return (keys.argmin(2).to(torch::kDouble) / static_cast<double>(std::max<int64_t>(1, u.T - 2)));
}

std::string u_shape_csv(const UShapes& u) {
  std::string text = "key_pos";
  for (const auto& checkpoint : u.checkpoints)
    for (int64_t l = 0; l < u.scores.size(1); ++l) text += "," + csv_quoted(checkpoint_label(checkpoint) + " L" + std::to_string(l));
  text += "\n";
  const auto scores = u.scores.contiguous();
  const auto a = scores.accessor<double, 3>();
  for (int64_t k = 0; k < u.T; ++k) {
    text += std::to_string(k);
    for (int64_t m = 0; m < scores.size(0); ++m)
      for (int64_t l = 0; l < scores.size(1); ++l) text += "," + csv_number(a[m][l][k]);
    text += "\n";
  }
  return text;
}

void write_u_shape_hdf5(const std::string& path, const UShapes& u) {
  const std::string g = kUShapeGroup;
  const std::vector<Hdf5Dataset> d = {
      {g + "/scores", u.scores, {}, {"model", "layer", "key_pos"}, {}},
      {g + "/minimum", u_shape_minimum_position(u), {}, {"model", "layer"}, {}},
  };
  const std::vector<Hdf5Attribute> attrs = {
      {"checkpoints", u.checkpoints},
      {"encodings", u.encodings},
      {"weights_sha256", u.weights_sha256},
      {"T", u.T},
      {"n_samples", u.n_samples},
      {"measure", std::string("last query's pre-softmax logit to each key, mean over heads and over "
                              "[BOS] + one token repeated (Chen et al. 2024 §4.1)")}};
  write_analysis_hdf5(path, d, {{g, attrs}}, {}, {}, u.meta);
}

UShapes read_u_shape_hdf5(const Hdf5Reader& file) {
  check_analysis_file_version(file);
  const std::string g = kUShapeGroup;
  UShapes u;
  u.scores = file.read(g + "/scores");
  u.checkpoints = file.string_list_attribute(g, "checkpoints");
  u.encodings = file.string_list_attribute(g, "encodings");
  u.weights_sha256 = file.string_list_attribute(g, "weights_sha256");
  u.T = file.int_attribute(g, "T");
  u.n_samples = file.int_attribute(g, "n_samples");
  if (u.scores.dim() != 3 || u.scores.size(0) != static_cast<int64_t>(u.checkpoints.size()) ||
      u.encodings.size() != u.checkpoints.size() || u.scores.size(2) != u.T || u.T < 3 || u.scores.size(1) < 1)
    throw Error(file.path() + ": " + kUShapeGroup + " datasets of inconsistent shapes");
  return u;
}

}  // namespace poslens
