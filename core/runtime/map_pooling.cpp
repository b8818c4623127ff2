#include "core/runtime/map_pooling.h"

#include <torch/torch.h>

#include <limits>
#include <vector>

namespace poslens {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

int64_t pool_stride(int64_t T, int64_t cells) { return T > cells ? ceil_div(T, cells) : 1; }

at::Tensor pooled_canvas(c10::IntArrayRef leading, int64_t rows, int64_t cols, int64_t stride) {
  std::vector<int64_t> shape(leading.begin(), leading.end());
  shape.push_back(ceil_div(rows, stride));
  shape.push_back(ceil_div(cols, stride));
  return torch::full(shape, kNegInf, torch::kFloat32);
}

void max_pool_block(at::Tensor& pooled, const at::Tensor& block_values, const at::Tensor& allowed,
                    int64_t q_begin, int64_t k_begin, int64_t s) {
  torch::NoGradGuard no_grad;
  const int64_t R = block_values.size(-2), K = block_values.size(-1);
  const auto values = block_values.detach().to(torch::kFloat32).masked_fill(allowed.logical_not(), kNegInf);
  // Pad with −inf to whole cells, then reduce each s × s cell.
  const int64_t r_off = q_begin % s, c_off = k_begin % s;
  const int64_t n_rows = ceil_div(r_off + R, s), n_cols = ceil_div(c_off + K, s);
  auto padded = values;
  if (s > 1)
    padded = torch::constant_pad_nd(values, {c_off, n_cols * s - K - c_off, r_off, n_rows * s - R - r_off},
                                    kNegInf);
  auto shape = values.sizes().vec();
  shape.resize(shape.size() - 2);
  shape.insert(shape.end(), {n_rows, s, n_cols, s});
  const int64_t d = static_cast<int64_t>(shape.size());
  const auto cells_max = padded.view(shape).amax({d - 3, d - 1}).to(torch::kCPU);
  auto cells = pooled.narrow(-2, q_begin / s, n_rows).narrow(-1, k_begin / s, n_cols);
  cells.copy_(torch::maximum(cells, cells_max));
}

at::Tensor finished_pooled(const at::Tensor& pooled) {
  return pooled.masked_fill(pooled.isneginf(), std::numeric_limits<float>::quiet_NaN());
}

}  // namespace poslens
