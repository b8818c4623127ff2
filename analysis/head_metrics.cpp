#include "analysis/head_metrics.h"

#include <torch/torch.h>

#include <limits>

#include "core/base/error.h"
#include "core/base/shape_text.h"

namespace poslens {

const std::vector<std::string>& head_metric_names() {
  static const std::vector<std::string> names = {"entropy", "mean_distance", "sink",
                                                 "previous_token", "position_share"};
  return names;
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
