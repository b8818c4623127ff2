#include "core/runtime/capture_sink.h"

#include <torch/torch.h>

#include <sstream>

#include "core/base/error.h"

namespace poslens {

at::Tensor Captures::find(const HookPoint& point) const {
  for (const auto& [p, t] : tensors)
    if (p == point) return t;
  return {};
}

HeadSelection parse_head_selection(const std::string& text, int64_t n_layers, int64_t n_heads) {
  HeadSelection out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    const auto dot = item.find('.');
    int layer = -1, head = -1;
    size_t used_l = 0, used_h = 0;
    try {
      if (dot != std::string::npos) {
        layer = std::stoi(item.substr(0, dot), &used_l);
        head = std::stoi(item.substr(dot + 1), &used_h);
      }
    } catch (const std::exception&) {
      used_l = 0;
    }
    if (dot == std::string::npos || used_l != dot || used_h != item.size() - dot - 1 || used_l == 0)
      throw Error("heads: \"" + item + "\" is not LAYER.HEAD (e.g. 5.3)");
    if (layer < 0 || layer >= n_layers || head < 0 || head >= n_heads)
      throw Error("heads: " + item + " is outside the model's " + std::to_string(n_layers) +
                  " layers × " + std::to_string(n_heads) + " heads");
    out.emplace_back(layer, head);
  }
  if (out.empty()) throw Error("heads: the list is empty (expected e.g. 5.3,0.1)");
  return out;
}

std::vector<int64_t> heads_of_layer(const HeadSelection& selection, int layer) {
  std::vector<int64_t> heads;
  for (const auto& [l, h] : selection)
    if (l == layer) heads.push_back(h);
  return heads;
}

CaptureSink::CaptureSink(CaptureSpec spec, Captures& out, std::optional<HeadSelection> heads)
    : spec_(std::move(spec)), out_(out), heads_(std::move(heads)) {}

bool CaptureSink::wants(const HookPoint& point) const {
  if (!spec_.wants(point)) return false;
  return !heads_ || !is_map_hook(point.kind) || !heads_of_layer(*heads_, point.layer).empty();
}

void CaptureSink::begin(int64_t batch, int64_t length) {
  (void)batch;
  length_ = length;
}

at::Tensor& CaptureSink::newest(const HookPoint& point) {
  for (auto it = out_.tensors.rbegin(); it != out_.tensors.rend(); ++it)
    if (it->first == point) return it->second;
  throw Error("internal: a later part of " + point.name() + " came before its first");
}

void CaptureSink::tensor(const HookPoint& point, const at::Tensor& value, int64_t pos_begin) {
  if (!value.defined()) return;
  // detach: a capture taken while training must not keep the autograd graph alive.
  const auto part = value.detach().to(torch::kCPU, torch::kFloat32);
  // Only the logits come in chunks of positions; every other hook comes whole (an encoder's
  // with its own length).
  if (pos_begin == 0 && (part.size(1) == length_ || point.kind != HookKind::Logits)) {
    out_.tensors.emplace_back(point, part.contiguous());
    return;
  }
  if (pos_begin == 0) {  // the first chunk of positions: the whole tensor, filled as they come
    auto shape = part.sizes().vec();
    shape[1] = length_;
    out_.tensors.emplace_back(point, torch::zeros(shape, torch::kFloat32));
  }
  newest(point).narrow(1, pos_begin, part.size(1)).copy_(part);
}

void CaptureSink::block(const HookPoint& point, const MapBlock& block) {
  auto values = block.values.detach();
  if (heads_) {
    const auto heads = heads_of_layer(*heads_, point.layer);
    values = values.index_select(1, torch::tensor(heads, torch::kLong).to(values.device()));
  }
  if (block.q_begin == 0) {  // the first block of this hook: the whole map, hidden entries filled
    out_.tensors.emplace_back(
        point, torch::full({values.size(0), values.size(1), block.length, block.key_length()},
                           masked_value(point.kind), torch::kFloat32));
  }
  newest(point)
      .narrow(2, block.q_begin, block.rows())
      .narrow(3, block.k_begin, block.keys())
      .copy_(values.to(torch::kFloat32));
}

}  // namespace poslens
