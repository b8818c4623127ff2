#include "analysis/probe.h"

#include <torch/torch.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <limits>
#include <random>
#include <stdexcept>

#include "analysis/rope_frequencies.h"
#include "core/base/compute_setup.h"
#include "core/runtime/model_input.h"
#include "core/base/error.h"
#include "core/runtime/resources.h"
#include "core/runtime/sinks.h"

namespace poslens {
namespace {

/// Memory one batch may use (activations of the forward plus the decomposition), in bytes.
constexpr int64_t kBatchBudget = int64_t{1} << 30;
constexpr int64_t kMaxBatch = 128;

int64_t auto_batch(const ModelConfig& c, int64_t T, int64_t C) {
  // Per sample: the forward's working memory (attention in blocks, no logits: resources.h) and
  // the [head, C, T] component terms of one layer. No [T, T] map and no layer's q and k kept
  // past the layer (ProbeSink).
  const int64_t bytes = forward_working_bytes(c, 1, T, torch::kFloat32) + 4 * 8 * c.n_heads * C * T;
  return std::clamp<int64_t>(kBatchBudget / std::max<int64_t>(bytes, 1), 1, kMaxBatch);
}

int64_t probe_bos(const LoadedModel& model, int64_t requested) {
  if (requested >= 0) return requested;
  if (model.tokenizer && model.tokenizer->bos_id() >= 0) return model.tokenizer->bos_id();
  if (model.model->config().bos_token_id >= 0) return model.model->config().bos_token_id;
  throw Error("the probe starts each sample with BOS, but this model has no BOS id (neither "
              "its tokenizer nor its config names one); give one explicitly (--bos ID)");
}

/// float64 sums over the probe's samples, per layer: of the last query's logits and their
/// squares, of each rotary component, of the unrotated remainder and of the position term.
struct ProbeSums {
  at::Tensor sum, sumsq, components, remainder, position;
};

/// One batch of probe samples, summed into ProbeSums as the forward pass hands out each layer:
/// rotary models' q (its last row) and k are decomposed when k arrives, so a batch holds one
/// layer's q and k at a time; of the maps only the last query's row is kept (LastRowSink).
/// Each layer is decomposed by its own rotary encoding (`rotary[l]`: Gemma 3's local and global
/// bases); a layer without one (a NoPE layer, a model without RoPE) gives its logits as they are.
class ProbeSink : public HookSink {
 public:
  using LayerRotary = std::vector<std::optional<RotaryInfo>>;
  /// The maps whose last row the probe reads: the logits themselves of the layers that do not
  /// rotate, and the position term where the encoding has one.
  static CaptureSpec row_hooks(const LayerRotary& rotary, bool position) {
    std::vector<std::string> hooks;
    for (size_t l = 0; l < rotary.size(); ++l)
      if (!rotary[l]) hooks.push_back("blocks." + std::to_string(l) + ".attn.hook_attn_scores");
    if (position) hooks.push_back("blocks.*.attn.hook_pos_scores");
    return CaptureSpec(hooks);
  }

  ProbeSink(const LayerRotary& rotary, bool position, bool per_component, double scale, int64_t T, ProbeSums& sums)
      : rotary_(rotary), position_(position), per_component_(per_component), scale_(scale), T_(T), sums_(sums),
        rows_(row_hooks(rotary, position)) {}
  bool wants(const HookPoint& p) const override {
    if ((p.kind == HookKind::Q || p.kind == HookKind::K) && rotates(p.layer)) return true;
    return rows_.wants(p);
  }
  void tensor(const HookPoint& p, const at::Tensor& value, int64_t) override {
    if (p.kind == HookKind::Q) {
      q_last_ = value.narrow(1, T_ - 1, 1);  // [b, 1, H, dh]
      return;
    }
    const auto dev = value.device();
    const auto parts = decompose_rotary_scores(q_last_, value, torch::full({1}, T_ - 1, torch::kLong),
                                               torch::arange(T_, torch::kLong), *rotary_[static_cast<size_t>(p.layer)],
                                               scale_);
    const auto comps = parts.components.squeeze(3);  // [b, H, C, T]
    total_ = comps.sum(2);
    const auto summed = (per_component_ ? comps : total_.unsqueeze(2)).sum(0).to(dev, torch::kDouble);
    sums_.components[p.layer].narrow(1, 0, summed.size(1)) += summed;  // a layer may have fewer components
    if (parts.remainder.defined()) {
      const auto rem = parts.remainder.squeeze(2);
      sums_.remainder[p.layer] += rem.sum(0).to(dev, torch::kDouble);
      total_ = total_ + rem;
    }
    q_last_ = at::Tensor();
  }
  void block(const HookPoint& p, const MapBlock& b) override { rows_.block(p, b); }
  void layer_done(int l) override {
    if (l < 0) return;
    at::Tensor total = total_;  // [b, H, T]
    if (!rotates(l)) {
      // Keys the query cannot see (a sliding window) are NaN, not −inf: the mean says so.
      const auto row = rows_.find({HookKind::AttnScores, l});
      total = row.masked_fill(row.isinf(), std::numeric_limits<float>::quiet_NaN());
    }
    if (position_) {
      const auto pos = rows_.find({HookKind::PosScores, l});
      sums_.position[l] += pos.sum(0).to(sums_.position.device(), torch::kDouble);
      if (rotates(l)) total = total + pos.to(total.device());  // hook_attn_scores has it already
    }
    const auto td = total.to(sums_.sum.device(), torch::kDouble);
    sums_.sum[l] += td.sum(0);
    sums_.sumsq[l] += td.pow(2).sum(0);
    total_ = at::Tensor();
  }

 private:
  bool rotates(int layer) const { return layer >= 0 && rotary_.at(static_cast<size_t>(layer)).has_value(); }

  const LayerRotary& rotary_;
  bool position_, per_component_;
  double scale_;
  int64_t T_;
  ProbeSums& sums_;
  LastRowSink rows_;
  at::Tensor q_last_, total_;
};

}  // namespace

std::pair<at::Tensor, at::Tensor> layer_theta(const ProbeResult& p, int64_t layer) {
  if (!p.theta_per_layer.defined()) return {p.theta, p.activated};
  if (layer < 0 || layer >= p.theta_per_layer.size(0))
    throw std::out_of_range("layer " + std::to_string(layer) + " is outside the probe");
  return {p.theta_per_layer[layer], p.activated_per_layer[layer]};
}

int64_t training_length(const ModelConfig& config) {
  if (!config.training_json.empty()) {
    const auto j = nlohmann::json::parse(config.training_json, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("length") && j["length"].is_number_integer() &&
        j["length"].get<int64_t>() > 0)
      return j["length"].get<int64_t>();
  }
  return std::max<int64_t>(config.n_ctx, 0);
}

std::vector<int64_t> probe_tokens(const LoadedModel& model, int64_t samples, uint64_t seed) {
  if (samples < 0) throw Error("the probe's sample count must be positive (or 0 for all)");
  int64_t vocab = model.model->config().vocab_size;
  std::vector<int64_t> special;
  if (model.tokenizer) {
    vocab = std::min(vocab, model.tokenizer->vocab_size());
    special = model.tokenizer->special_ids();
  } else if (model.model->config().bos_token_id >= 0) {
    special = {model.model->config().bos_token_id};
  }
  std::vector<int64_t> candidates;
  for (int64_t id = 0; id < vocab; ++id)
    if (std::find(special.begin(), special.end(), id) == special.end()) candidates.push_back(id);
  if (candidates.empty()) throw Error("the vocabulary has no non-special token to probe with");
  if (samples == 0) return candidates;

  std::mt19937_64 rng(seed);
  std::shuffle(candidates.begin(), candidates.end(), rng);
  std::vector<int64_t> drawn(candidates.begin(),
                             candidates.begin() + std::min<int64_t>(samples, candidates.size()));
  std::uniform_int_distribution<size_t> any(0, candidates.size() - 1);
  while (static_cast<int64_t>(drawn.size()) < samples) drawn.push_back(candidates[any(rng)]);
  return drawn;
}

void compute_probe_vaf(ProbeResult& r) {
  const int64_t n_layers = r.scores.size(0), H = r.scores.size(1), C = r.components.size(2);
  if (C == 0) {
    r.vaf = torch::zeros({n_layers, 0});
    r.vaf_per_head = torch::zeros({n_layers, H, 0});
    return;
  }
  r.vaf = variance_accounted_for(r.scores.mean(1).unsqueeze(1), r.components.mean(1))
              .to(torch::kFloat);
  r.vaf_per_head =
      variance_accounted_for(r.scores.unsqueeze(2), r.components).to(torch::kFloat);
}

ProbeResult run_probe(const LoadedModel& loaded, const ProbeOptions& options,
                      const std::function<bool(int64_t, int64_t)>& progress) {
  require_one_stack(loaded, "The U-shape probe");
  c10::InferenceMode inference;
  const Transformer& model = *loaded.model;
  const ModelConfig& cfg = model.config();
  const PositionEncoding& pe = model.position_encoding();
  const int64_t T = options.length;
  if (T < 2) throw Error("the probe needs --length T of at least 2 (BOS and one token)");

  ProbeResult r;
  r.T = T;
  r.bos_id = probe_bos(loaded, options.bos_id);
  if (r.bos_id >= cfg.vocab_size)
    throw Error("BOS id " + std::to_string(r.bos_id) + " is outside the vocabulary");
  r.tokens = options.tokens.empty() ? probe_tokens(loaded, options.samples, options.seed)
                                    : options.tokens;
  for (int64_t id : r.tokens)
    if (id < 0 || id >= cfg.vocab_size)
      throw Error("probe token " + std::to_string(id) + " is outside the vocabulary");
  r.n_samples = static_cast<int64_t>(r.tokens.size());
  r.L = options.train_length > 0 ? options.train_length : training_length(cfg);

  const auto rotary = pe.rotary_info(T);
  // Each layer's own rotation (NoPE layers: none; their components stay zero). Layers may rotate
  // more components than the model-wide encoding (Gemma 4's wider global heads): C is the most of
  // any layer, and a layer's components past its own are NaN in θ and the VAF, 0 in the sums.
  ProbeSink::LayerRotary layer_rotary;
  int64_t C = rotary ? rotary->rotary_dim / 2 : 0;
  for (int l = 0; l < cfg.n_layers; ++l) {
    layer_rotary.push_back(rotary ? model.position_encoding(l).rotary_info(T) : std::nullopt);
    if (layer_rotary.back()) C = std::max(C, layer_rotary.back()->rotary_dim / 2);
    if (layer_rotary.back() && layer_rotary.back()->pairing != rotary->pairing)
      throw Error("layer " + std::to_string(l) + " pairs its rotary dims otherwise than the model: the probe needs one pairing");
  }
  const auto padded = [C](const at::Tensor& theta) {
    auto out = torch::full({C}, std::numeric_limits<double>::quiet_NaN(), torch::kDouble);
    out.narrow(0, 0, theta.size(0)).copy_(theta);
    return out;
  };
  if (rotary) {
    r.pairing = to_string(rotary->pairing);
    r.kept_components = rotary->kept_components;
    r.theta = padded(effective_theta(*rotary));
  } else {
    r.theta = torch::zeros({0}, torch::kDouble);
  }
  r.activated = r.L > 0 ? activated_components(r.theta, r.L) : torch::zeros({C}, torch::kBool);
  const bool has_position = pe.has_position_scores();
  bool has_remainder = false;
  for (int l = 0; l < cfg.n_layers; ++l)
    if (const auto& own = layer_rotary[static_cast<size_t>(l)])
      has_remainder = has_remainder || own->rotary_dim < model.layer_config(l).d_head;

  // Rotary models: q and k, split per component. Others: the logits themselves (so any term a
  // method adds, such as Transformer-XL's u·k, is in `scores`).
  const int64_t batch = options.batch > 0 ? options.batch : auto_batch(cfg, T, C);
  const int64_t NL = cfg.n_layers, H = cfg.n_heads;
  const auto dev = model.device();
  const auto f64 = torch::dtype(torch::kDouble).device(dev);
  ProbeSums sums{torch::zeros({NL, H, T}, f64), torch::zeros({NL, H, T}, f64),
                 torch::zeros({NL, H, options.per_component ? C : std::min<int64_t>(C, 1), T}, f64),
                 torch::zeros({NL, H, T}, f64),
                 torch::zeros({NL, H, T}, f64)};
  for (int64_t start = 0; start < r.n_samples; start += batch) {
    const int64_t b = std::min(batch, r.n_samples - start);
    const auto repeated = torch::tensor(std::vector<int64_t>(r.tokens.begin() + start,
                                                             r.tokens.begin() + start + b),
                                        torch::kLong);
    auto ids = repeated.view({b, 1}).expand({b, T}).clone();
    ids.select(1, 0).fill_(r.bos_id);
    ProbeSink sink(layer_rotary, has_position, options.per_component, cfg.attention_scale(), T, sums);
    ForwardOptions forward;
    forward.logits = LogitsReturned::None;
    model.forward(ids, sink, [&](int, int) { return !progress || progress(start, r.n_samples); }, forward);
    if (progress && !progress(start + b, r.n_samples)) throw Cancelled();
  }
  auto& [sum, sumsq, comp_sum, rem_sum, pos_sum] = sums;

  const double n = static_cast<double>(r.n_samples);
  const auto mean = sum / n;
  r.scores = mean.to(torch::kCPU, torch::kFloat);
  r.scores_std = (sumsq / n - mean.pow(2)).clamp_min(0).sqrt().to(torch::kCPU, torch::kFloat);
  r.components = (comp_sum / n).to(torch::kCPU, torch::kFloat);
  if (has_remainder) r.remainder = (rem_sum / n).to(torch::kCPU, torch::kFloat);
  if (has_position) r.position_terms = (pos_sum / n).to(torch::kCPU, torch::kFloat);
  if (options.per_component) compute_probe_vaf(r);
  if (cfg.per_layer_schemes() && rotary) {  // each layer's own θ_c: Gemma 3's two bases, NoPE rows 0
    r.theta_per_layer = torch::zeros({NL, C}, torch::kDouble);
    for (int64_t l = 0; l < NL; ++l) {
      const auto& own = layer_rotary[static_cast<size_t>(l)];
      if (!own) continue;
      r.theta_per_layer[l].copy_(padded(effective_theta(*own)));
      const int64_t mine = own->rotary_dim / 2;
      if (mine < C && options.per_component) {  // components this layer does not have
        r.vaf[l].narrow(0, mine, C - mine).fill_(std::numeric_limits<float>::quiet_NaN());
        r.vaf_per_head[l].narrow(1, mine, C - mine).fill_(std::numeric_limits<float>::quiet_NaN());
      }
    }
    r.activated_per_layer = r.L > 0 ? activated_components(r.theta_per_layer, r.L) : torch::zeros({NL, C}, torch::kBool);
  }
  // The batches' blocks are free now: hand them back, so that the caller's next phase (a
  // position map's own forward pass) does not add its working memory on top of them.
  sums = {};
  release_free_memory();
  return r;
}

}  // namespace poslens
