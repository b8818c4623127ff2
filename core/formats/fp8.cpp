#include "core/formats/fp8.h"

#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <set>

#include "core/base/error.h"
#include "core/base/shape_text.h"

namespace poslens {
namespace {

/// HF's naming (finegrained_fp8.py): `X_scale_inv` beside `X`, so `X.weight_scale_inv` for `X.weight`.
std::string scale_name(const std::string& name) { return name + "_scale_inv"; }

int64_t blocks_of(int64_t n, int64_t block) { return (n + block - 1) / block; }

/// The scale shape a weight of `shape` needs: its leading dims, then its row and column blocks.
std::vector<int64_t> scale_shape(const std::vector<int64_t>& shape, Fp8BlockSize block) {
  std::vector<int64_t> out(shape.begin(), shape.end() - 2);
  out.push_back(blocks_of(shape[shape.size() - 2], block.rows));
  out.push_back(blocks_of(shape.back(), block.cols));
  return out;
}

bool is_floating(StoredDType t) { return t == StoredDType::F32 || t == StoredDType::BF16 || t == StoredDType::F16; }

std::string block_text(Fp8BlockSize b) {
  return "[" + std::to_string(b.rows) + ", " + std::to_string(b.cols) + "]";
}

}  // namespace

const at::Tensor& e4m3_values() {
  static const at::Tensor values = [] {
    auto t = torch::empty({256});
    auto a = t.accessor<float, 1>();
    for (int b = 0; b < 256; ++b) {
      const int exponent = (b >> 3) & 0x0F, mantissa = b & 0x07;
      const float magnitude = exponent == 0x0F && mantissa == 0x07 ? std::numeric_limits<float>::quiet_NaN()
                              : exponent == 0 ? std::ldexp(static_cast<float>(mantissa), -9)
                                              : std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, exponent - 7);
      a[b] = (b & 0x80) ? -magnitude : magnitude;
    }
    return t;
  }();
  return values;
}

at::Tensor dequantize_fp8_blocks(const at::Tensor& codes, const at::Tensor& scale_inv, Fp8BlockSize block,
                                 const std::string& name) {
  if (block.rows < 1 || block.cols < 1)
    throw Error(name + ": FP8 weight_block_size " + block_text(block) + " must be positive");
  if (codes.scalar_type() != at::kByte || codes.dim() < 2 || !at::isFloatingType(scale_inv.scalar_type()) ||
      scale_inv.sizes().vec() != scale_shape(codes.sizes().vec(), block))
    throw Error(name + ": FP8 blocks " + block_text(block) + " need uint8 codes [..., R, C] and floating scales "
                "[..., ceil(R / " + std::to_string(block.rows) + "), ceil(C / " + std::to_string(block.cols) +
                ")], got " + shape_str(codes) + " and " + shape_str(scale_inv));
  const int64_t R = codes.size(-2), C = codes.size(-1);
  const auto flat_codes = codes.reshape({-1, R, C});
  const auto flat_scales = scale_inv.to(torch::kFloat32).reshape({-1, scale_inv.size(-2), scale_inv.size(-1)});
  auto out = torch::empty({flat_codes.size(0), R, C});
  for (int64_t m = 0; m < flat_codes.size(0); ++m)
    for (int64_t i = 0; i * block.rows < R; ++i) {
      const int64_t r0 = i * block.rows, rows = std::min(block.rows, R - r0);
      const auto row_codes = flat_codes[m].narrow(0, r0, rows);
      const auto values = e4m3_values().index_select(0, row_codes.flatten().to(torch::kLong)).view({rows, C});
      const auto scales = flat_scales[m][i].repeat_interleave(block.cols).narrow(0, 0, C);  // [C]
      out[m].narrow(0, r0, rows).copy_(values * scales);
    }
  return out.view(codes.sizes());
}

Fp8BlockDequantized::Fp8BlockDequantized(const TensorSource& inner, Fp8BlockSize block)
    : inner_(inner), block_(block) {
  std::map<std::string, const TensorInfo*> by_name;
  for (const auto& t : inner.tensors()) by_name[t.name] = &t;
  std::set<std::string> scales;
  for (const auto& t : inner.tensors()) {
    if (t.dtype != StoredDType::F8_E4M3) continue;
    const auto scale = scale_name(t.name);
    const auto s = by_name.find(scale);
    if (s == by_name.end())
      throw Error(inner.describe() + ": " + t.name + " is F8_E4M3 without " + scale +
                  " (PosLens dequantises FP8 weights with a scale per block, quant_method \"fp8\"; "
                  "per-tensor or activation scales are not read)");
    const auto wanted = t.shape.size() >= 2 ? scale_shape(t.shape, block) : std::vector<int64_t>{};
    if (!is_floating(s->second->dtype) || t.shape.size() < 2 || s->second->shape != wanted)
      throw Error(inner.describe() + ": " + t.name + " " + shape_str(t.shape) + " in FP8 blocks of " +
                  block_text(block) + " (weight_block_size) needs " + scale + " F32 " + shape_str(wanted) +
                  ", it is " + to_string(s->second->dtype) + " " + shape_str(s->second->shape));
    scale_of_[t.name] = scale;
    scales.insert(scale);
  }
  for (const auto& t : inner.tensors()) {
    if (scales.count(t.name)) continue;
    tensors_.push_back(t);
    if (scale_of_.count(t.name)) tensors_.back().dtype = StoredDType::F32;
  }
}

at::Tensor Fp8BlockDequantized::load(const std::string& name) const {
  const auto it = scale_of_.find(name);
  if (it == scale_of_.end()) return inner_.load(name);
  return dequantize_fp8_blocks(inner_.load(name), inner_.load(it->second), block_, name);
}

void Fp8BlockDequantized::release(const std::string& name) const {
  inner_.release(name);
  const auto it = scale_of_.find(name);
  if (it != scale_of_.end()) inner_.release(it->second);
}

}  // namespace poslens
