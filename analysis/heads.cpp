#include "analysis/heads.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

#include "analysis/csv_text.h"
#include "core/runtime/model_input.h"
#include "core/base/error.h"
#include "core/base/shape_text.h"

namespace poslens {

const std::vector<std::string>& head_metric_names() {
  static const std::vector<std::string> names = {
      "entropy",        "mean_distance",   "sink",      "sink_2",         "sink_3", "sink_4",
      "previous_token", "duplicate_token", "induction", "position_share", "learned_sink"};
  return names;
}

namespace {
/// The float64 sums per (layer, head): the metrics in head_metric_names() order up to the
/// detectors, then Σ A (the detectors' denominator) and the position share's moments.
enum Sum : int64_t {
  kEntropy, kDistance, kSink1, kSink2, kSink3, kSink4, kPrevious, kDuplicate, kInduction,
  kMass, kCount, kPos, kPos2, kLogit, kLogit2, kSums
};
constexpr int64_t kSinkTokens = 4;

/// [B, rows, keys] float masks of the duplicate-token and induction detection patterns over
/// rows [q0, q0 + rows) and keys [k0, k0 + keys) of `ids` [B, T] (formulas at HeadMetrics).
std::pair<at::Tensor, at::Tensor> detector_masks(const at::Tensor& ids, int64_t q0, int64_t rows,
                                                 int64_t k0, int64_t keys) {
  const auto dev = ids.device();
  const auto i = torch::arange(q0, q0 + rows, torch::dtype(torch::kLong).device(dev)).unsqueeze(1);
  const auto j = torch::arange(k0, k0 + keys, torch::dtype(torch::kLong).device(dev)).unsqueeze(0);
  const auto tq = ids.narrow(1, q0, rows).unsqueeze(2);  // [B, rows, 1]
  const auto tk = ids.narrow(1, k0, keys).unsqueeze(1);  // [B, 1, keys]
  // t_{j−1} for each key j; key 0 has none (−1 matches no token).
  const auto before = torch::cat({torch::full({ids.size(0), 1}, -1, ids.options()), ids}, 1);
  const auto tk_prev = before.narrow(1, k0, keys).unsqueeze(1);
  const auto duplicate = (tq == tk) & (j < i);
  const auto induction = (tq == tk_prev) & (j <= i);
  return {duplicate.to(torch::kFloat32), induction.to(torch::kFloat32)};
}
}  // namespace

std::string head_metrics_csv(int64_t n_layers, int64_t n_heads, const std::vector<double>& values) {
  const auto& names = head_metric_names();
  std::string text = "layer,head";
  for (const auto& name : names) text += "," + name;
  text += "\n";
  for (int64_t i = 0; i < n_layers * n_heads; ++i) {
    text += std::to_string(i / n_heads) + "," + std::to_string(i % n_heads);
    for (size_t m = 0; m < names.size(); ++m)
      text += "," + csv_number(values.at(static_cast<size_t>(i) * names.size() + m));
    text += "\n";
  }
  return text;
}

HeadMetricsSink::HeadMetricsSink(int64_t n_layers, int64_t n_heads, bool position_share, at::Tensor ids,
                                 bool learned_sinks)
    : n_layers_(n_layers),
      n_heads_(n_heads),
      position_share_(position_share),
      learned_sinks_(learned_sinks),
      ids_(std::move(ids)) {}

bool HeadMetricsSink::wants(const HookPoint& point) const {
  return point.kind == HookKind::Pattern ||
         (position_share_ && (point.kind == HookKind::AttnScores || point.kind == HookKind::PosScores));
}

void HeadMetricsSink::begin(int64_t batch, int64_t length) {
  if (ids_.defined() && (ids_.dim() != 2 || ids_.size(0) != batch || ids_.size(1) != length))
    throw Error("head metrics: the detectors' ids are " + shape_str(ids_) + ", the pass runs [" +
                std::to_string(batch) + ", " + std::to_string(length) + "]");
  batch_ = batch;
  length_ = length;
  sums_ = torch::zeros({n_layers_, n_heads_, kSums}, torch::kDouble);
}

void HeadMetricsSink::block(const HookPoint& point, const MapBlock& block) {
  torch::NoGradGuard no_grad;
  auto sums = sums_[point.layer];  // [head, kSums]
  const auto dev = block.values.device();
  if (point.kind == HookKind::Pattern) {
    const auto p = block.values.detach().to(torch::kFloat32);  // [B, H, rows, keys]
    // Rows are reduced in float32 first ([B, H, rows]), then summed in float64 ([H]).
    const auto total = [](const at::Tensor& rows) {
      return rows.to(torch::kDouble).flatten(2).sum(2).sum(0).to(torch::kCPU);
    };
    // p·ln p with 0·ln 0 = 0: ln of p clamped to 1e-30 (vectorised, unlike xlogy here).
    sums.select(1, kEntropy) -= total((p * p.clamp_min(1e-30f).log()).sum(-1));
    // Σ_j p_ij (i − j) = i·Σ_j p_ij − Σ_j p_ij·j.
    const auto i = torch::arange(block.q_begin, block.q_begin + block.rows(), torch::dtype(torch::kFloat32).device(dev));
    const auto j = torch::arange(block.k_begin, block.k_begin + block.keys(), torch::dtype(torch::kFloat32).device(dev));
    sums.select(1, kDistance) += total(p.sum(-1) * i - torch::matmul(p, j));
    sums.select(1, kMass) += total(p.sum(-1));
    // Mass on the first k tokens: the block's keys [k_begin, …) that lie below k (a sliding
    // window's later blocks start past some or all of them).
    for (int64_t k = 1; k <= kSinkTokens; ++k) {
      const int64_t first_keys = std::min(k - block.k_begin, block.keys());
      if (first_keys > 0) sums.select(1, kSink1 + k - 1) += total(p.narrow(3, 0, first_keys).sum(-1));
    }
    // Entries (i, i − 1) lie on the diagonal with column = row + q_begin − 1 − k_begin.
    const int64_t offset = block.q_begin - 1 - block.k_begin;
    if (offset > -block.rows() && offset < block.keys())
      sums.select(1, kPrevious) += total(p.diagonal(offset, 2, 3));
    if (ids_.defined()) {
      if (ids_.device() != dev) ids_ = ids_.to(dev);  // once: blocks come on the model's device
      const auto [duplicate, induction] =
          detector_masks(ids_, block.q_begin, block.rows(), block.k_begin, block.keys());
      sums.select(1, kDuplicate) += total((p * duplicate.unsqueeze(1)).sum(-1));
      sums.select(1, kInduction) += total((p * induction.unsqueeze(1)).sum(-1));
    }
    return;
  }
  // Position share: count, Σx and Σx² of the logits and the position term over visible entries.
  // Rows are reduced in float32 ([B, H, rows]), then summed in float64 ([H]).
  const auto x = block.values.detach().to(torch::kFloat32).masked_fill(block.allowed.logical_not(), 0.0);
  const auto total = [](const at::Tensor& rows) {
    return rows.to(torch::kDouble).sum(2).sum(0).to(torch::kCPU);
  };
  const bool is_pos = point.kind == HookKind::PosScores;
  if (is_pos)
    sums.select(1, kCount) += block.allowed.sum().item<double>() * static_cast<double>(x.size(0));
  sums.select(1, is_pos ? kPos : kLogit) += total(x.sum(-1));
  sums.select(1, is_pos ? kPos2 : kLogit2) += total((x * x).sum(-1));
}

HeadMetrics HeadMetricsSink::result() const {
  const double queries = static_cast<double>(batch_ * length_);
  const auto s = sums_.unbind(2);
  const auto n = s[kCount];
  const auto var = [&](const at::Tensor& sum, const at::Tensor& sum2) {
    return sum2 / n - (sum / n).pow(2);
  };
  auto share = torch::full({n_layers_, n_heads_}, std::numeric_limits<double>::quiet_NaN(), torch::kDouble);
  if (position_share_) {
    const auto var_logit = var(s[kLogit], s[kLogit2]);
    share = torch::where((n > 1) & (var_logit > 0), var(s[kPos], s[kPos2]) / var_logit, share);
  }
  const auto nan = torch::full_like(share, std::numeric_limits<double>::quiet_NaN());
  const auto detector = [&](Sum sum) {
    return ids_.defined() || sum == kPrevious ? s[sum] / s[kMass] : nan;
  };
  // A learned sink takes what the keys do not: 1 − Σ_j p_ij per query.
  const auto learned_sink = learned_sinks_ ? 1.0 - s[kMass] / queries : nan;
  return {torch::stack({s[kEntropy] / queries, s[kDistance] / queries, s[kSink1] / queries,
                        s[kSink2] / queries, s[kSink3] / queries, s[kSink4] / queries,
                        detector(kPrevious), detector(kDuplicate), detector(kInduction), share,
                        learned_sink},
                       -1)};
}

std::vector<int64_t> induction_tokens(const ModelConfig& config, int64_t n, uint64_t seed) {
  const bool bos = config.bos_token_id >= 0 && config.bos_token_id < config.vocab_size;
  if (n < 1) throw Error("the induction sequence needs a length of at least 1, got " + std::to_string(n));
  if (config.vocab_size < (bos ? 3 : 2))
    throw Error("the induction sequence needs a vocabulary of at least two tokens");
  const int64_t total = 2 * n + (bos ? 1 : 0);
  if (config.n_ctx > 0 && total > config.n_ctx)
    throw Error("the induction sequence of " + std::to_string(total) + " tokens exceeds the model's n_ctx " +
                std::to_string(config.n_ctx) + " (choose a shorter induction length)");
  std::mt19937_64 random(seed);
  // Draw from the vocabulary without the BOS id: one id fewer, shifted past it.
  std::uniform_int_distribution<int64_t> draw(0, config.vocab_size - (bos ? 2 : 1));
  std::vector<int64_t> half(static_cast<size_t>(n));
  for (auto& id : half) {
    id = draw(random);
    if (bos && id >= config.bos_token_id) ++id;
  }
  std::vector<int64_t> ids;
  if (bos) ids.push_back(config.bos_token_id);
  ids.insert(ids.end(), half.begin(), half.end());
  ids.insert(ids.end(), half.begin(), half.end());
  return ids;
}

at::Tensor detection_pattern(const std::string& name, const at::Tensor& ids) {
  if (ids.dim() != 1) throw Error("detection_pattern: ids must be [T], got " + shape_str(ids));
  const int64_t T = ids.size(0);
  const auto t = ids.to(torch::kCPU, torch::kLong).unsqueeze(0);
  if (name == "previous_token") return torch::diag(torch::ones({T - 1}, torch::kDouble), -1);
  const auto [duplicate, induction] = detector_masks(t, 0, T, 0, T);
  if (name == "duplicate_token") return duplicate[0].to(torch::kDouble);
  if (name == "induction") return induction[0].to(torch::kDouble);
  throw Error("detection_pattern: unknown detector '" + name +
              "' (previous_token, duplicate_token, induction)");
}

HeadMetrics compute_head_metrics(const LoadedModel& loaded, const std::vector<int64_t>& ids,
                                 const Progress& progress, const HeadMetricsOptions& options) {
  require_one_stack(loaded, "Head metrics");
  const auto& cfg = loaded.model->config();
  if (ids.empty()) throw Error("no tokens to measure (the input is empty)");
  // The repeated sequence is shortened to fit a small model's context (2n + 1 ≤ n_ctx).
  const int64_t room = cfg.n_ctx > 0 ? (cfg.n_ctx - 1) / 2 : options.induction_length;
  const int64_t length = std::min(options.induction_length, room);
  const bool induction = length > 0;
  const auto repeated = induction ? induction_tokens(cfg, length, options.seed) : std::vector<int64_t>{};
  c10::InferenceMode inference;
  ForwardOptions forward;
  forward.logits = LogitsReturned::None;
  // The input's pass, then the induction sequence's (weighted by length).
  const double input_share = static_cast<double>(ids.size()) / static_cast<double>(ids.size() + repeated.size());
  const auto text_ids = torch::tensor(ids, torch::kLong).unsqueeze(0);
  HeadMetricsSink sink(cfg.n_layers, cfg.n_heads, loaded.model->position_encoding().has_position_scores(), text_ids,
                       cfg.attention_sinks);
  loaded.model->forward(text_ids, sink, progress.part(0.0, input_share, "input").layers(), forward);
  HeadMetrics metrics = sink.result();
  const int64_t column = kInduction;
  if (!induction) {
    metrics.values.select(2, column).fill_(std::numeric_limits<double>::quiet_NaN());
    return metrics;
  }
  const auto seq = torch::tensor(repeated, torch::kLong).unsqueeze(0);
  HeadMetricsSink induction_sink(cfg.n_layers, cfg.n_heads, false, seq);
  loaded.model->forward(seq, induction_sink, progress.part(input_share, 1.0 - input_share).layers(), forward);
  metrics.values.select(2, column).copy_(induction_sink.result().values.select(2, column));
  metrics.induction_ids = repeated;
  return metrics;
}

HeadMetrics head_metrics(const at::Tensor& pattern, const at::Tensor& allowed,
                         const at::Tensor& logits, const at::Tensor& position, const at::Tensor& ids) {
  if (pattern.dim() != 4 || pattern.size(2) != pattern.size(3) ||
      allowed.sizes() != pattern.sizes().slice(2))
    throw Error("head_metrics: pattern must be [layer, head, q, q] with allowed [q, q], got " +
                shape_str(pattern) + " and " + shape_str(allowed));
  for (const auto* t : {&logits, &position})
    if (t->defined() && t->sizes() != pattern.sizes())
      throw Error("head_metrics: logits and position terms must have the pattern's shape " +
                  shape_str(pattern) + ", got " + shape_str(*t));
  const int64_t T = pattern.size(2);
  if (ids.defined() && (ids.dim() != 1 || ids.size(0) != T))
    throw Error("head_metrics: ids must be [" + std::to_string(T) + "], got " + shape_str(ids));
  const auto p = pattern.to(torch::kCPU, torch::kDouble);
  const auto mask = allowed.to(torch::kCPU, torch::kBool);
  const auto i = torch::arange(T, torch::kDouble).unsqueeze(1);
  const auto j = torch::arange(T, torch::kDouble).unsqueeze(0);

  const auto plogp = torch::where(p > 0, p * p.log(), torch::zeros_like(p));
  const auto entropy = (-plogp.sum(-1)).mean(-1);
  const auto distance = (p * (i - j)).sum(-1).mean(-1);
  std::vector<at::Tensor> sinks;  // mass on the first k tokens, k = 1..4
  for (int64_t k = 1; k <= kSinkTokens; ++k) sinks.push_back(p.narrow(-1, 0, std::min(k, T)).sum(-1).mean(-1));
  const auto sink = sinks[0];
  // TransformerLens's score: Σ(A ⊙ D)/Σ A over the whole map.
  const auto score = [&](const std::string& name) {
    const auto tokens = ids.defined() ? ids : torch::zeros({T}, torch::kLong);  // previous: any
    return (p * detection_pattern(name, tokens)).sum({2, 3}) / p.sum({2, 3});
  };
  const auto nan = torch::full_like(sink, std::numeric_limits<double>::quiet_NaN());
  const auto previous = score("previous_token");
  const auto duplicate = ids.defined() ? score("duplicate_token") : nan;
  const auto induction = ids.defined() ? score("induction") : nan;

  auto share = torch::full_like(sink, std::numeric_limits<double>::quiet_NaN());
  if (logits.defined() && position.defined()) {
    const auto where = mask.expand_as(p);
    const int64_t L = p.size(0), H = p.size(1);
    for (int64_t l = 0; l < L; ++l)
      for (int64_t h = 0; h < H; ++h) {
        const auto pos = position[l][h].to(torch::kCPU, torch::kDouble).masked_select(where[l][h]);
        const auto all = logits[l][h].to(torch::kCPU, torch::kDouble).masked_select(where[l][h]);
        const double var_all = all.numel() > 1 ? all.var(false).item<double>() : 0.0;
        if (var_all > 0) share[l][h] = pos.var(false).item<double>() / var_all;
      }
  }
  return {torch::stack({entropy, distance, sinks[0], sinks[1], sinks[2], sinks[3], previous,
                        duplicate, induction, share, nan},
                       -1)};
}

}  // namespace poslens
