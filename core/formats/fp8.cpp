#include "core/formats/fp8.h"

#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "core/base/error.h"
#include "core/base/shape_text.h"

namespace poslens {
namespace {

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

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (const auto d : shape) n *= d;
  return n;
}

/// compressed-tensors' activation scales (QuantizationScheme input_activations / output_activations,
/// kv_cache_scheme): `X.input_scale`, `X.output_scale`, `self_attn.k_scale`, ...
bool is_activation_scale(const std::string& name) {
  for (const char* suffix : {".input_scale", ".output_scale", ".q_scale", ".k_scale", ".v_scale"}) {
    const std::string s = suffix;
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) return true;
  }
  return false;
}

template <typename T, typename F>
std::string joined(const std::vector<T>& items, const std::string& separator, F text) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : separator) + text(item);
  return out;
}

}  // namespace

Fp8BlockSize Fp8Strategy::block_for(int64_t R, int64_t C) const {
  switch (kind) {
    case Kind::Tensor: return {R, C};
    case Kind::Channel: return {1, C};
    case Kind::Group: return {1, block.cols};
    case Kind::Block: break;
  }
  return block;
}

std::string Fp8Strategy::text() const {
  switch (kind) {
    case Kind::Tensor: return "per tensor";
    case Kind::Channel: return "per output channel";
    case Kind::Group: return "in groups of " + std::to_string(block.cols);
    case Kind::Block: break;
  }
  return "in blocks of " + block_text(block);
}

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
                                 const std::string& name, c10::ScalarType out_dtype) {
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
  // `out` itself is returned, not a view of it: a view made with grad mode on keeps its base, so
  // the loader would see a shared block and copy it (weight_table.cpp, is_private_block).
  auto out = torch::empty(codes.sizes(), torch::TensorOptions().dtype(out_dtype));
  auto flat_out = out.view({-1, R, C});
  // ~1M elements at a time, whatever the block (a per-tensor scale's block is the whole weight),
  // through three buffers made once per weight and written in place: with the heap that
  // set_up_compute keeps, fresh intermediates per chunk would leave holes between the weights.
  const int64_t chunk = std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(1, C));
  const int64_t buffer_rows = std::min(chunk, R);
  auto indices = torch::empty({buffer_rows * C}, torch::kLong);
  auto values = torch::empty({buffer_rows, C});
  auto scales = torch::empty({buffer_rows, C});
  const auto scale_cols = torch::arange(C, torch::kLong).div(block.cols, "floor");  // column -> its block
  for (int64_t m = 0; m < flat_codes.size(0); ++m)
    for (int64_t r0 = 0; r0 < R; r0 += chunk) {
      const int64_t rows = std::min(chunk, R - r0);
      auto i = indices.narrow(0, 0, rows * C);
      auto v = values.narrow(0, 0, rows);
      auto s = scales.narrow(0, 0, rows);
      i.copy_(flat_codes[m].narrow(0, r0, rows).reshape({-1}));
      auto flat_v = v.view({-1});
      at::index_select_out(flat_v, e4m3_values(), 0, i);
      const auto scale_rows = torch::arange(r0, r0 + rows, torch::kLong).div(block.rows, "floor");
      at::index_select_out(s, flat_scales[m].index_select(0, scale_rows), 1, scale_cols);
      flat_out[m].narrow(0, r0, rows).copy_(v.mul_(s));
    }
  return out;
}

Fp8Dequantized::Fp8Dequantized(const TensorSource& inner, Fp8Scaling scaling, c10::ScalarType dtype)
    : inner_(inner), scaling_(std::move(scaling)), dtype_(dtype) {
  std::map<std::string, const TensorInfo*> by_name;
  for (const auto& t : inner.tensors()) by_name[t.name] = &t;
  std::set<std::string> hidden;
  for (const auto& t : inner.tensors()) {
    if (t.dtype != StoredDType::F8_E4M3) continue;
    const auto scale = t.name + scaling_.scale_suffix;
    const auto s = by_name.find(scale);
    if (s == by_name.end())
      throw Error(inner.describe() + ": " + t.name + " is F8_E4M3 without " + scale +
                  " (PosLens dequantises FP8 weights with float scales: quant_method \"fp8\" (X_scale_inv) "
                  "and compressed-tensors' float-quantized (X.weight_scale))");
    if (scaling_.strategies.empty())
      throw Error(inner.describe() + ": " + t.name + " is F8_E4M3, but " + scaling_.origin + " quantises no weights");
    // The tilings whose scale shape this scale has; a per-tensor scale may be stored as [1].
    std::vector<Fp8Strategy> fits;
    std::vector<std::vector<int64_t>> wanted;
    for (const auto& strategy : scaling_.strategies) {
      if (t.shape.size() < 2) break;
      const auto block = strategy.block_for(t.shape[t.shape.size() - 2], t.shape.back());
      wanted.push_back(scale_shape(t.shape, block));
      if (s->second->shape == wanted.back() || (numel(wanted.back()) == 1 && numel(s->second->shape) == 1))
        fits.push_back(strategy);
    }
    const auto tilings = joined(scaling_.strategies, " or ", [](const Fp8Strategy& x) { return x.text(); });
    if (!is_floating(s->second->dtype) || fits.empty())
      throw Error(inner.describe() + ": " + t.name + " " + shape_str(t.shape) + " scaled " + tilings + " (" +
                  scaling_.origin + ") needs " + scale + " F32 " +
                  joined(wanted, " or ", [](const std::vector<int64_t>& w) { return shape_str(w); }) + ", it is " +
                  to_string(s->second->dtype) + " " + shape_str(s->second->shape));
    const int64_t R = t.shape[t.shape.size() - 2], C = t.shape.back();
    const auto clipped = [&](const Fp8Strategy& x) {
      const auto b = x.block_for(R, C);
      return std::make_pair(std::min(b.rows, R), std::min(b.cols, C));
    };
    for (const auto& other : fits)
      if (clipped(other) != clipped(fits.front()))
        throw Error(inner.describe() + ": " + scale + " " + shape_str(s->second->shape) + " reads as " +
                    fits.front().text() + " and as " + other.text() + " (" + scaling_.origin + ") for " + t.name +
                    " " + shape_str(t.shape) + "; PosLens cannot tell which");
    quantised_[t.name] = {scale, fits.front()};
    hidden.insert(scale);
  }
  for (const auto& t : inner.tensors()) {
    if (hidden.count(t.name)) continue;
    if (scaling_.activation_scales && is_activation_scale(t.name)) {
      ++activation_scales_;
      continue;
    }
    tensors_.push_back(t);
    if (quantised_.count(t.name) && !stored_dtype_of(dtype_, &tensors_.back().dtype))
      throw Error(inner.describe() + ": FP8 weights dequantise to float32, bfloat16 or float16");
  }
}

std::string Fp8Dequantized::summary() const {
  if (quantised_.empty()) return "";
  std::map<std::string, size_t> per_strategy;
  for (const auto& q : quantised_) ++per_strategy[q.second.strategy.text()];
  std::string tilings;
  for (const auto& [text, n] : per_strategy)
    tilings += (tilings.empty() ? "" : ", ") + (per_strategy.size() > 1 ? std::to_string(n) + " " : "") + text;
  const auto n = quantised_.size();
  return std::to_string(n) + (n == 1 ? " weight" : " weights") + " dequantised, " + tilings +
         (activation_scales_ ? "; " + std::to_string(activation_scales_) + " activation scales unread" : "");
}

at::Tensor Fp8Dequantized::load(const std::string& name) const {
  const auto it = quantised_.find(name);
  if (it == quantised_.end()) return inner_.load(name);
  const auto codes = inner_.load(name);
  const auto block = it->second.strategy.block_for(codes.size(-2), codes.size(-1));
  const auto scale = inner_.load(it->second.scale).reshape(scale_shape(codes.sizes().vec(), block));
  return dequantize_fp8_blocks(codes, scale, block, name, dtype_);
}

void Fp8Dequantized::release(const std::string& name) const {
  inner_.release(name);
  const auto it = quantised_.find(name);
  if (it != quantised_.end()) inner_.release(it->second.scale);
}

}  // namespace poslens
