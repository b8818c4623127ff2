#include "analysis/head_metrics.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/runtime/run.h"
#include "core/base/error.h"
#include "core/base/shape_text.h"

namespace poslens {

const std::vector<std::string>& head_metric_names() {
  static const std::vector<std::string> names = {"entropy", "mean_distance", "sink",
                                                 "previous_token", "position_share"};
  return names;
}

namespace {
enum Sum : int64_t { kEntropy, kDistance, kSink, kPrevious, kCount, kPos, kPos2, kLogit, kLogit2, kSums };
}  // namespace

std::string head_metrics_csv(int64_t n_layers, int64_t n_heads, const std::vector<double>& values) {
  const auto& names = head_metric_names();
  std::string text = "layer,head";
  for (const auto& name : names) text += "," + name;
  text += "\n";
  char number[32];
  for (int64_t i = 0; i < n_layers * n_heads; ++i) {
    text += std::to_string(i / n_heads) + "," + std::to_string(i % n_heads);
    for (size_t m = 0; m < names.size(); ++m) {
      const double v = values.at(static_cast<size_t>(i) * names.size() + m);
      text += ",";
      if (!std::isnan(v)) {
        std::snprintf(number, sizeof number, "%.9g", v);
        text += number;
      }
    }
    text += "\n";
  }
  return text;
}

HeadMetricsSink::HeadMetricsSink(int64_t n_layers, int64_t n_heads, bool position_share)
    : n_layers_(n_layers), n_heads_(n_heads), position_share_(position_share) {}

bool HeadMetricsSink::wants(const HookPoint& point) const {
  return point.kind == HookKind::Pattern ||
         (position_share_ && (point.kind == HookKind::AttnScores || point.kind == HookKind::PosScores));
}

void HeadMetricsSink::begin(int64_t batch, int64_t length) {
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
    if (block.k_begin == 0) sums.select(1, kSink) += total(p.select(3, 0));
    // Entries (i, i − 1) lie on the diagonal with column = row + q_begin − 1 − k_begin.
    const int64_t offset = block.q_begin - 1 - block.k_begin;
    if (offset > -block.rows() && offset < block.keys())
      sums.select(1, kPrevious) += total(p.diagonal(offset, 2, 3));
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
  const double previous = static_cast<double>(batch_ * std::max<int64_t>(length_ - 1, 0));
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
  const auto prev = previous > 0 ? s[kPrevious] / previous : torch::zeros_like(share);
  return {torch::stack({s[kEntropy] / queries, s[kDistance] / queries, s[kSink] / queries, prev, share}, -1)};
}

HeadMetrics compute_head_metrics(const LoadedModel& loaded, const std::vector<int64_t>& ids,
                                 const Progress& progress) {
  require_one_stack(loaded, "Head metrics");
  const auto& cfg = loaded.model->config();
  if (ids.empty()) throw Error("no tokens to measure (the input is empty)");
  HeadMetricsSink sink(cfg.n_layers, cfg.n_heads, loaded.model->position_encoding().has_position_scores());
  c10::InferenceMode inference;
  ForwardOptions options;
  options.logits = LogitsReturned::None;
  loaded.model->forward(torch::tensor(ids, torch::kLong).unsqueeze(0), sink, progress.layers(), options);
  return sink.result();
}

HeadMetrics head_metrics(const at::Tensor& pattern, const at::Tensor& allowed,
                         const at::Tensor& logits, const at::Tensor& position) {
  if (pattern.dim() != 4 || pattern.size(2) != pattern.size(3) ||
      allowed.sizes() != pattern.sizes().slice(2))
    throw Error("head_metrics: pattern must be [layer, head, q, q] with allowed [q, q], got " +
                shape_str(pattern) + " and " + shape_str(allowed));
  for (const auto* t : {&logits, &position})
    if (t->defined() && t->sizes() != pattern.sizes())
      throw Error("head_metrics: logits and position terms must have the pattern's shape " +
                  shape_str(pattern) + ", got " + shape_str(*t));
  const int64_t T = pattern.size(2);
  const auto p = pattern.to(torch::kCPU, torch::kDouble);
  const auto mask = allowed.to(torch::kCPU, torch::kBool);
  const auto i = torch::arange(T, torch::kDouble).unsqueeze(1);
  const auto j = torch::arange(T, torch::kDouble).unsqueeze(0);

  const auto plogp = torch::where(p > 0, p * p.log(), torch::zeros_like(p));
  const auto entropy = (-plogp.sum(-1)).mean(-1);
  const auto distance = (p * (i - j)).sum(-1).mean(-1);
  const auto sink = p.select(-1, 0).mean(-1);
  const auto previous = T > 1 ? p.diagonal(-1, 2, 3).mean(-1) : torch::zeros_like(sink);

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
  return {torch::stack({entropy, distance, sink, previous, share}, -1)};
}

}  // namespace poslens
