#include "analysis/segment_mass.h"

#include <torch/torch.h>

#include <algorithm>
#include <limits>

#include "core/base/error.h"
#include "core/runtime/attention.h"

namespace poslens {

SegmentMassSink::SegmentMassSink(const Transformer& model, std::vector<KeySegment> segments, int64_t q_begin,
                                 int64_t q_end)
    : model_(model), segments_(std::move(segments)), q_begin_(q_begin), q_end_(q_end) {
  if (q_begin < 0 || q_end <= q_begin)
    throw Error("segment mass: query rows [" + std::to_string(q_begin) + ", " + std::to_string(q_end) +
                ") are empty");
  for (const auto& s : segments_)
    if (s.begin < 0 || s.end < s.begin)
      throw Error("segment mass: segment \"" + s.name + "\" [" + std::to_string(s.begin) + ", " +
                  std::to_string(s.end) + ") is not a span of keys");
  const auto& c = model.config();
  mass_ = torch::full({c.n_layers, c.n_heads, static_cast<int64_t>(segments_.size())},
                      std::numeric_limits<float>::quiet_NaN(), torch::kFloat32);
}

void SegmentMassSink::attention_inputs(const LayerAttentionInputs& inputs) {
  const int l = inputs.layer;
  if (l < 0 || l >= mass_.size(0)) return;
  if (inputs.q.size(0) != 1) throw Error("segment mass: measured on one sequence, got a batch of " +
                                         std::to_string(inputs.q.size(0)));
  const LayerAttention attention(model_.layer_config(l), model_.position_encoding(l), inputs);
  if (q_end_ > attention.length())
    throw Error("segment mass: query rows end at " + std::to_string(q_end_) + ", past the input's " +
                std::to_string(attention.length()) + " positions");
  const auto lse = attention.row_lse(q_begin_, q_end_);
  const auto [first, last] = attention.key_range(q_begin_, q_end_);
  BlockRequest pattern;
  pattern.pattern = true;
  for (size_t s = 0; s < segments_.size(); ++s) {
    const int64_t k0 = std::max(segments_[s].begin, first), k1 = std::min(segments_[s].end, last);
    auto column = mass_[l].select(1, static_cast<int64_t>(s));
    if (k1 <= k0) {  // no row of the range can see the segment
      column.zero_();
      continue;
    }
    const auto block = attention.region(q_begin_, q_end_, k0, k1, pattern, lse);
    // [1, head, rows, keys] -> mean over rows of the sum over keys, [head]
    column.copy_(block.pattern[0].sum(-1).mean(-1).to(torch::kCPU, torch::kFloat32));
  }
}

}  // namespace poslens
