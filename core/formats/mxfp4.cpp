#include "core/formats/mxfp4.h"

#include <torch/torch.h>

#include <map>

#include "core/base/error.h"
#include "core/base/shape_text.h"

namespace poslens {
namespace {

const std::string kBlocks = "_blocks", kScales = "_scales";

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() > tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

/// MXFP4's block layout: uint8 [E, rows, G, 16].
bool is_block_layout(const TensorInfo& t) {
  return t.dtype == StoredDType::U8 && t.shape.size() == 4 && t.shape[3] == 16;
}

/// FP4 E2M1 (OCP MX v1.0 §5.3.3: sign, two exponent bits with bias 1, one mantissa bit) of both
/// nibbles of every byte value: float [256, 2], the low nibble's value first.
const at::Tensor& byte_pairs() {
  static const at::Tensor pairs = [] {
    const float fp4[16] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f,
                           -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
    auto t = torch::empty({256, 2});
    auto a = t.accessor<float, 2>();
    for (int b = 0; b < 256; ++b) {
      a[b][0] = fp4[b & 0x0F];
      a[b][1] = fp4[b >> 4];
    }
    return t;
  }();
  return pairs;
}

}  // namespace

at::Tensor dequantize_mxfp4(const at::Tensor& blocks, const at::Tensor& scales, const std::string& name) {
  if (blocks.scalar_type() != at::kByte || scales.scalar_type() != at::kByte || blocks.dim() != 4 ||
      blocks.size(3) != 16 || scales.sizes() != blocks.sizes().slice(0, 3))
    throw Error(name + ": MXFP4 needs uint8 blocks [E, rows, G, 16] and uint8 scales [E, rows, G], got " +
                shape_str(blocks) + " and " + shape_str(scales));
  const int64_t E = blocks.size(0), rows = blocks.size(1), G = blocks.size(2);
  auto out = torch::empty({E, G * 32, rows}, torch::kBFloat16);
  // One expert at a time: the float32 intermediates stay ~8× one expert's blocks, not the tensor's.
  for (int64_t e = 0; e < E; ++e) {
    const auto values = byte_pairs().index_select(0, blocks[e].flatten().to(torch::kLong)).view({rows, G, 32});
    const auto exponent = scales[e].to(torch::kInt).sub(127).unsqueeze(-1);  // E8M0: 2^(s − 127)
    out[e].copy_(at::ldexp(values, exponent).view({rows, G * 32}).t());
  }
  return out;
}

Mxfp4Dequantized::Mxfp4Dequantized(const TensorSource& inner) : inner_(inner) {
  std::map<std::string, const TensorInfo*> by_name;
  for (const auto& t : inner.tensors()) by_name[t.name] = &t;
  for (const auto& t : inner.tensors()) {
    if (!ends_with(t.name, kBlocks) || !is_block_layout(t)) continue;
    const std::string stem = t.name.substr(0, t.name.size() - kBlocks.size());
    const auto s = by_name.find(stem + kScales);
    const std::vector<int64_t> scale_shape(t.shape.begin(), t.shape.begin() + 3);
    if (s == by_name.end() || s->second->dtype != StoredDType::U8 || s->second->shape != scale_shape)
      throw Error(inner.describe() + ": " + t.name + " " + shape_str(t.shape) + " is MXFP4 blocks without " + stem +
                  kScales + " uint8 " + shape_str(scale_shape) +
                  (s == by_name.end() ? "" : " (it is " + std::string(to_string(s->second->dtype)) + " " +
                                                 shape_str(s->second->shape) + ")"));
    packed_.insert(stem);
  }
  for (const auto& t : inner.tensors()) {
    if (ends_with(t.name, kScales) && packed_.count(t.name.substr(0, t.name.size() - kScales.size()))) continue;
    if (!ends_with(t.name, kBlocks) || !packed_.count(t.name.substr(0, t.name.size() - kBlocks.size()))) {
      tensors_.push_back(t);
      continue;
    }
    // [E, rows, G, 16] -> [E, G·32, rows]
    tensors_.push_back({t.name.substr(0, t.name.size() - kBlocks.size()), StoredDType::BF16,
                        {t.shape[0], t.shape[2] * 32, t.shape[1]}});
  }
}

at::Tensor Mxfp4Dequantized::load(const std::string& name) const {
  if (!packed_.count(name)) return inner_.load(name);
  return dequantize_mxfp4(inner_.load(name + kBlocks), inner_.load(name + kScales), name);
}

void Mxfp4Dequantized::release(const std::string& name) const {
  if (!packed_.count(name)) return inner_.release(name);
  inner_.release(name + kBlocks);
  inner_.release(name + kScales);
}

}  // namespace poslens
