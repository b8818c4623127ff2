#include "core/runtime/sinks.h"

#include <torch/torch.h>

#include <limits>

#include "core/base/error.h"

namespace poslens {
namespace {

/// The entry of `list` for `point`, appended (made by `make`) when missing.
at::Tensor& entry(std::vector<std::pair<HookPoint, at::Tensor>>& list, const HookPoint& point,
                  const std::function<at::Tensor()>& make) {
  for (auto& [p, t] : list)
    if (p == point) return t;
  list.emplace_back(point, make());
  return list.back().second;
}

}  // namespace

at::Tensor select_heads(const at::Tensor& values, const std::optional<HeadSelection>& heads, int layer) {
  if (!heads) return values;
  return values.index_select(1, torch::tensor(heads_of_layer(*heads, layer), torch::kLong).to(values.device()));
}

PooledMapSink::PooledMapSink(CaptureSpec spec, int64_t cells, std::optional<HeadSelection> heads)
    : spec_(std::move(spec)), cells_(cells), heads_(std::move(heads)) {
  if (cells_ < 1) throw Error("pooled maps need at least 1 cell per axis, got " + std::to_string(cells_));
}

bool PooledMapSink::wants(const HookPoint& point) const {
  return is_map_hook(point.kind) && spec_.wants(point) &&
         (!heads_ || !heads_of_layer(*heads_, point.layer).empty());
}

void PooledMapSink::begin(int64_t batch, int64_t length) {
  (void)batch;
  length_ = length;
  stride_ = pool_stride(length, cells_);
  maps_.clear();
  strides_.clear();
}

void PooledMapSink::block(const HookPoint& point, const MapBlock& block) {
  const auto values = select_heads(block.values, heads_, point.layer);
  // Each map's own stride: an encoder–decoder model's encoder maps are longer than the
  // decoder's (begin() saw the decoder's length).
  const int64_t stride = pool_stride(std::max(block.length, block.key_length()), cells_);
  auto& map = entry(maps_, point, [&] {
    strides_[point] = stride;
    return pooled_canvas({values.size(0), values.size(1)}, block.length, block.key_length(), stride);
  });
  max_pool_block(map, values, block.allowed, block.q_begin, block.k_begin, stride);
}

int64_t PooledMapSink::stride_of(const HookPoint& point) const {
  const auto it = strides_.find(point);
  return it == strides_.end() ? stride_ : it->second;
}

std::vector<std::pair<HookPoint, at::Tensor>> PooledMapSink::maps() const {
  std::vector<std::pair<HookPoint, at::Tensor>> out;
  for (const auto& [point, map] : maps_)
    out.emplace_back(point, finished_pooled(map));
  return out;
}

void LastRowSink::block(const HookPoint& point, const MapBlock& block) {
  const int64_t last = block.length - 1;
  if (last < block.q_begin || last >= block.q_begin + block.rows()) return;
  const auto row = block.values.detach().select(2, last - block.q_begin).to(torch::kCPU, torch::kFloat32);
  auto& kept = entry(rows_, point, [&] {
    return torch::full({row.size(0), row.size(1), block.key_length()}, masked_value(point.kind), torch::kFloat32);
  });
  kept.narrow(2, block.k_begin, block.keys()).copy_(row);
}

at::Tensor LastRowSink::find(const HookPoint& point) const {
  for (const auto& [p, t] : rows_)
    if (p == point) return t;
  return {};
}

void AttentionInputsSink::attention_inputs(const LayerAttentionInputs& in) {
  LayerAttentionInputs kept = in;
  kept.q = into(q_all_, in.q, in.layer);
  kept.k = into(k_all_, in.k, in.layer);
  if (!keep_values_) kept.v = at::Tensor();  // maps need q and k only
  out_.push_back(std::move(kept));
}

at::Tensor AttentionInputsSink::into(at::Tensor& all, const at::Tensor& x, int layer) const {
  if (!all.defined()) {
    auto shape = x.sizes().vec();
    shape.insert(shape.begin(), n_layers_);
    all = at::empty(shape, x.options());
  }
  if (layer < 0 || layer >= n_layers_ || all[0].sizes() != x.sizes()) return x;  // not uniform: keep as made
  return all[layer].copy_(x);
}

}  // namespace poslens
