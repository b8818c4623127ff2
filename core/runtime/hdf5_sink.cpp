#include "core/runtime/hdf5_sink.h"

#include <torch/torch.h>

#include "core/runtime/sinks.h"

namespace poslens {

Hdf5CaptureSink::Hdf5CaptureSink(Hdf5Writer& file, CaptureSpec spec,
                                 std::optional<HeadSelection> heads, bool maps)
    : file_(file), spec_(std::move(spec)), heads_(std::move(heads)), maps_(maps) {}

bool Hdf5CaptureSink::wants(const HookPoint& point) const {
  if (!spec_.wants(point)) return false;
  if (!is_map_hook(point.kind)) return true;
  return maps_ && (!heads_ || !heads_of_layer(*heads_, point.layer).empty());
}

void Hdf5CaptureSink::begin(int64_t batch, int64_t length) {
  (void)batch;
  length_ = length;
}

void Hdf5CaptureSink::tensor(const HookPoint& point, const at::Tensor& value, int64_t pos_begin) {
  const std::string path = "/captures/" + point.name();
  const auto part = value.detach().to(torch::kCPU, torch::kFloat32);
  if (created_.insert(path).second) {
    auto shape = part.sizes().vec();
    if (point.kind == HookKind::Logits) shape[1] = length_;  // the one hook sent in chunks
    file_.create(path, shape, point.dims());
  }
  std::vector<int64_t> offset(static_cast<size_t>(part.dim()), 0);
  offset[1] = pos_begin;
  file_.write(path, offset, part);
}

void Hdf5CaptureSink::block(const HookPoint& point, const MapBlock& block) {
  const std::string path = "/captures/" + point.name();
  const auto values = select_heads(block.values.detach(), heads_, point.layer).to(torch::kCPU, torch::kFloat32);
  if (created_.insert(path).second) {
    std::vector<Hdf5Attribute> attributes;
    if (heads_) attributes.push_back({"heads", heads_of_layer(*heads_, point.layer)});
    // Unwritten entries (keys outside the blocks: hidden) read as the hook's masked value.
    file_.create(path, {values.size(0), values.size(1), block.length, block.key_length()}, point.dims(),
                 attributes, masked_value(point.kind));
  }
  file_.write(path, {0, 0, block.q_begin, block.k_begin}, values);
}

}  // namespace poslens
