#include "analysis/positional_influence.h"

#include <torch/torch.h>
#include <ATen/CPUGeneratorImpl.h>

#include <chrono>
#include <cmath>
#include <filesystem>

#include "analysis/analysis_registry.h"
#include "analysis/analysis_views.h"
#include "analysis/csv_text.h"
#include "analysis/forward_cost.h"
#include "core/base/error.h"
#include "core/base/text.h"
#include "core/runtime/hook_sink.h"
#include "core/runtime/model_input.h"
#include "core/runtime/resources.h"

namespace poslens {
namespace {

/// Keeps hook_embed (the tensor the gradients are taken against) and, per layer, the last
/// position's hook_resid_post — both still in the autograd graph.
class InfluenceSink : public HookSink {
 public:
  explicit InfluenceSink(int64_t n_layers) : last_(static_cast<size_t>(n_layers)) {}
  bool wants(const HookPoint& point) const override {
    return point.stack == HookStack::Blocks && (point.kind == HookKind::Embed || point.kind == HookKind::ResidPost);
  }
  void tensor(const HookPoint& point, const at::Tensor& value, int64_t) override {
    if (point.kind == HookKind::Embed) embed_ = value;
    else if (point.layer >= 0 && point.layer < static_cast<int>(last_.size()))
      last_[static_cast<size_t>(point.layer)] = value.select(1, value.size(1) - 1);  // [batch, d_model]
  }
  const at::Tensor& embed() const { return embed_; }
  const std::vector<at::Tensor>& last() const { return last_; }

 private:
  at::Tensor embed_;
  std::vector<at::Tensor> last_;
};

/// Bytes of autograd graph one copy of a T-token input keeps: about layers · (3 · heads · T² +
/// 16 · T · max(d_model, d_mlp)) floats (the attention's scores, probabilities and mask; the
/// blocks' activations).
double graph_bytes_per_copy(const ModelConfig& c, int64_t T) {
  return 4.0 * static_cast<double>(c.n_layers) *
         (3.0 * static_cast<double>(c.n_heads) * static_cast<double>(T) * static_cast<double>(T) +
          16.0 * static_cast<double>(T) * static_cast<double>(std::max(c.d_model, c.d_mlp)));
}

/// Copies of the input per batched forward: at most 2 GiB of graph, at least one copy.
int64_t influence_batch(const ModelConfig& c, int64_t T) {
  return std::max<int64_t>(1, static_cast<int64_t>(2.0 * (1 << 30) / graph_bytes_per_copy(c, T)));
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

PositionalInfluence compute_positional_influence(const LoadedModel& loaded, const std::vector<int64_t>& ids,
                                                 const PositionalInfluenceOptions& options,
                                                 const Progress& progress) {
  require_one_stack(loaded, "Positional influence");
  const auto T = static_cast<int64_t>(ids.size());
  if (T < 2) throw Error("positional influence needs at least two tokens (the last one and a source), got " +
                         std::to_string(T));
  if (options.probes < -1) throw Error("positional influence: probes must be ≥ 0 (0: exact), got " +
                                       std::to_string(options.probes));
  const auto& model = *loaded.model;
  const auto& c = model.config();
  const int64_t L = c.n_layers, d = c.d_model;
  const int64_t available = model.device().is_cpu() ? available_memory_bytes() : -1;
  if (available > 0 && graph_bytes_per_copy(c, T) > static_cast<double>(available))
    throw Error("positional influence keeps an autograd graph of about " +
                gigabytes(static_cast<int64_t>(graph_bytes_per_copy(c, T))) + " for " + std::to_string(T) +
                " tokens (every layer's attention probabilities), more than the " + gigabytes(available) +
                " of memory available: give a shorter input");
  PositionalInfluence p;
  p.seed = options.seed;
  p.probes = options.probes >= 0 ? options.probes : (d <= kExactInfluenceWidth ? 0 : kInfluenceProbes);
  const auto start = std::chrono::steady_clock::now();
  const auto tokens = torch::tensor(ids, torch::kLong).unsqueeze(0).to(model.device());
  p.forward_seconds = plain_forward_seconds(model, tokens);  // the reference, same input

  // The same weights with an embedding table that requires grad (an alias: nothing is copied).
  c10::InferenceMode no_inference(false);
  torch::AutoGradMode grad(true);
  ModelWeights weights = model.weights();
  weights.tok_embed = weights.tok_embed.detach().requires_grad_(true);
  const Transformer graph_model(c, weights);

  // Every (layer, probe) pair is one element of a batch of copies of the input: one batched
  // forward and one backward give uᵀ J^l for all the pairs of a chunk (the copies are independent).
  const int64_t passes = p.probes == 0 ? d : p.probes;
  const int64_t total = L * passes;
  const int64_t chunk = std::min(total, influence_batch(c, T));
  auto generator = at::make_generator<at::CPUGeneratorImpl>(options.seed);
  auto squares = torch::zeros({L, T}, torch::kDouble);
  ForwardOptions forward;
  forward.logits = LogitsReturned::None;
  for (int64_t q0 = 0; q0 < total; q0 += chunk) {
    const int64_t B = std::min(chunk, total - q0);
    InfluenceSink sink(L);
    graph_model.forward(tokens.expand({B, T}).contiguous(), sink, {}, forward);
    if (!sink.embed().defined() || !sink.embed().requires_grad())
      throw Error("positional influence: this model's forward gave no differentiable hook_embed");
    auto probes = torch::zeros({L, B, d}, torch::kFloat32);  // grad_outputs per layer
    for (int64_t b = 0; b < B; ++b) {
      const int64_t l = (q0 + b) / passes, k = (q0 + b) % passes;
      if (p.probes == 0) probes[l][b][k] = 1.0f;
      else probes[l][b] = torch::randn({d}, generator, torch::kFloat32);
    }
    std::vector<at::Tensor> outputs, grad_outputs;
    for (int64_t l = q0 / passes; l <= (q0 + B - 1) / passes; ++l) {
      const auto& target = sink.last()[static_cast<size_t>(l)];
      if (!target.defined() || !target.requires_grad())
        throw Error("positional influence: layer " + std::to_string(l) + " gave no differentiable hook_resid_post");
      outputs.push_back(target);
      grad_outputs.push_back(probes[l].to(target.options()));
    }
    const auto g = torch::autograd::grad(outputs, {sink.embed()}, grad_outputs, /*retain_graph=*/false,
                                         /*create_graph=*/false, /*allow_unused=*/true)[0];
    if (g.defined()) {
      const auto per_position = g.to(torch::kDouble).pow(2).sum(-1).cpu();  // [B, T]
      for (int64_t b = 0; b < B; ++b) squares[(q0 + b) / passes] += per_position[b];
    }
    progress.step(q0 + B, total);
  }
  if (p.probes > 0) squares /= static_cast<double>(p.probes);
  p.influence = squares.sqrt().to(torch::kFloat32);
  p.seconds = seconds_since(start);
  return p;
}

void write_positional_influence_hdf5(const std::string& path, const PositionalInfluence& p,
                                     const AnalysisInput& input, const ExportMetadata& meta) {
  const std::string g = kPositionalInfluenceGroup;
  const std::vector<Hdf5Dataset> d = {
      {g + "/influence", p.influence, {}, {"layer", "pos"}, {}},
      {g + "/seconds", torch::tensor(std::vector<double>{p.seconds, p.forward_seconds}, torch::kDouble), {}, {"run"}, {}}};
  const std::vector<Hdf5Attribute> attrs = {
      {"probes", p.probes},
      {"seed", static_cast<int64_t>(p.seed)},
      {"seconds", std::string("wall-clock seconds: [0] the whole computation, [1] one plain forward of the input")},
      {"measure", std::string("Frobenius norm of d blocks.{l}.hook_resid_post[T-1] / d hook_embed[i] (probes 0: "
                              "exact; K: mean over K Gaussian vector-Jacobian products); Barbero et al. 2024, "
                              "arXiv 2406.04267")}};
  write_analysis_hdf5(path, d, {{g, attrs}}, torch::tensor(input.ids, torch::kLong).unsqueeze(0), input.labels,
                      meta);
}

PositionalInfluence read_positional_influence_hdf5(const Hdf5Reader& file) {
  check_analysis_file_version(file);
  const std::string g = kPositionalInfluenceGroup;
  PositionalInfluence p;
  p.influence = file.read(g + "/influence").to(torch::kFloat32);
  if (p.influence.dim() != 2 || p.influence.size(1) < 2)
    throw Error(file.path() + ": " + g + "/influence is not [layer, pos] with at least two positions");
  p.probes = file.int_attribute(g, "probes");
  p.seed = static_cast<uint64_t>(file.int_attribute(g, "seed"));
  if (file.exists(g + "/seconds")) {
    const auto seconds = file.read(g + "/seconds").to(torch::kDouble).flatten();
    if (seconds.numel() == 2) {
      p.seconds = seconds[0].item<double>();
      p.forward_seconds = seconds[1].item<double>();
    }
  }
  return p;
}

std::string positional_influence_csv(const PositionalInfluence& p, const std::vector<std::string>& labels) {
  std::string text = "layer,position,distance,token,influence\n";
  const auto v = p.influence.contiguous();
  const int64_t L = v.size(0), T = v.size(1);
  const float* x = v.data_ptr<float>();
  for (int64_t l = 0; l < L; ++l)
    for (int64_t i = 0; i < T; ++i) {
      const std::string token =
          i < static_cast<int64_t>(labels.size()) ? csv_quoted(display_label(labels[static_cast<size_t>(i)])) : "";
      text += std::to_string(l) + "," + std::to_string(i) + "," + std::to_string(T - 1 - i) + "," + token + "," +
              csv_number(x[l * T + i]) + "\n";
    }
  return text;
}

AnalysisResult positional_influence_result(const PositionalInfluence& p, const AnalysisInput& input,
                                           const std::string& name) {
  AnalysisResult r;
  r.title = "Positional influence of " + name;
  const int64_t L = p.influence.size(0), T = p.influence.size(1);
  const auto by_distance = p.influence.to(torch::kDouble).flip(1).contiguous();  // [layer, distance]
  r.curves.title = name + "  ‖∂h_last / ∂x_i‖ per layer (" +
                   (p.probes == 0 ? std::string("exact") : std::to_string(p.probes) + " probes") + ")";
  r.curves.x_label = "distance from the last token (T − 1 − i)";
  r.curves.y_label = "‖∂h^l_{T−1} / ∂x_i‖_F";
  r.curves.log_y = true;
  for (int64_t i = 0; i < T; ++i) r.curves.x.push_back(static_cast<double>(i));
  for (int64_t l = 0; l < L; ++l) {
    r.curves.names.push_back("layer " + std::to_string(l));
    const double* row = by_distance[l].data_ptr<double>();
    std::vector<double> y(row, row + T);
    for (auto& v : y)
      if (!(v > 0)) v = std::nan("");  // a log axis: an exact zero (no path) is a gap
    r.curves.y.push_back(std::move(y));
  }
  // The last layer: self share, the first token's share of the rest, the half-mass distance.
  const auto last = by_distance[L - 1];
  const double total = last.sum().item<double>(), self = last[0].item<double>();
  const auto rest = last.narrow(0, 1, T - 1);
  const double rest_total = rest.sum().item<double>();
  const double first = last[T - 1].item<double>();
  int64_t half = T - 1;
  if (rest_total > 0) {
    const auto cumulative = rest.cumsum(0) / rest_total;
    half = (cumulative < 0.5).sum().item<int64_t>() + 1;
  }
  r.summary = std::to_string(L) + " layers, T = " + std::to_string(T) + "; last layer: the last token " +
              significant(total > 0 ? self / total : 0) + " of the influence, the first token " +
              significant(rest_total > 0 ? first / rest_total : 0) + " of the rest, half of the rest within distance " +
              std::to_string(half);
  if (p.forward_seconds > 0)
    r.summary += "; cost " + significant(p.seconds / p.forward_seconds) + "× one forward (" + significant(p.seconds) + " s)";
  r.csv = positional_influence_csv(p, input.labels);
  r.write_hdf5 = [p, input](const std::string& path, const ExportMetadata& meta) {
    write_positional_influence_hdf5(path, p, input, meta);
  };
  return r;
}

AnalysisResult run_positional_influence(const LoadedModel& model, const AnalysisInput& input,
                                        const Progress& progress) {
  return positional_influence_result(compute_positional_influence(model, input.ids, {}, progress), input,
                                     std::filesystem::path(model.path).filename().string());
}

AnalysisResult read_positional_influence(const Hdf5Reader& file) {
  const auto p = read_positional_influence_hdf5(file);
  AnalysisInput input;
  if (file.exists("/tokens/ids")) {
    const auto ids = file.read("/tokens/ids").flatten().contiguous();
    input.ids.assign(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + ids.numel());
  }
  input.labels = read_token_labels(file);
  return positional_influence_result(
      p, input, std::filesystem::path(file.string_attribute("/", "checkpoint")).filename().string());
}

}  // namespace poslens
