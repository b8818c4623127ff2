// Block max/mean pooling of a 2-D map down to a drawable grid, ignoring masked (-inf/NaN) cells.
#include "analysis/heatmap_pooling.h"

#include <torch/torch.h>

#include <cstring>
#include <limits>
#include <string>

#include "core/base/error.h"
#include "core/runtime/map_pooling.h"

namespace poslens {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

HeatmapData pool_heatmap(const at::Tensor& map, int64_t max_rows, int64_t max_cols,
                         Pooling pooling) {
  if (!map.defined()) throw Error("pool_heatmap: no map given");
  if (map.dim() != 2)
    throw Error("pool_heatmap: expected a 2-D map [q_pos, k_pos], got " +
                std::to_string(map.dim()) + " dimensions");
  if (max_rows < 1 || max_cols < 1)
    throw Error("pool_heatmap: size limits must be >= 1, got " + std::to_string(max_rows) +
                " x " + std::to_string(max_cols));

  torch::NoGradGuard no_grad;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const int64_t src_rows = map.size(0);
  const int64_t src_cols = map.size(1);
  // Rows (columns) per output cell: the stride of every pooled map (core/runtime/map_pooling.h).
  const int64_t br = pool_stride(src_rows, max_rows);
  const int64_t bc = pool_stride(src_cols, max_cols);
  const int64_t rows = ceil_div(src_rows, br);
  const int64_t cols = ceil_div(src_cols, bc);

  // float32 on the map's own device; -inf (masked logits) becomes NaN.
  torch::Tensor x = map.to(torch::kFloat);
  x = x.masked_fill(torch::isneginf(x), nan);

  torch::Tensor out;
  if (br == 1 && bc == 1) {
    out = x;
  } else {
    // Pad with NaN to whole blocks, then view as [rows, br, cols, bc] and reduce dims 1 and 3.
    const int64_t pad_r = rows * br - src_rows;
    const int64_t pad_c = cols * bc - src_cols;
    if (pad_r > 0 || pad_c > 0)
      x = torch::constant_pad_nd(x, {0, pad_c, 0, pad_r}, nan);
    const torch::Tensor blocks = x.reshape({rows, br, cols, bc});
    const torch::Tensor masked = torch::isnan(blocks);
    if (!masked.any().item<bool>()) {  // nothing masked: plain reductions, no copies
      out = pooling == Pooling::Max ? blocks.amax({1, 3}) : blocks.mean({1, 3});
    } else {
      const torch::Tensor count = masked.logical_not().sum({1, 3});
      if (pooling == Pooling::Max) {
        const float ninf = -std::numeric_limits<float>::infinity();
        out = blocks.masked_fill(masked, ninf).amax({1, 3});
      } else {
        out = blocks.masked_fill(masked, 0.0f).sum({1, 3}) / count.to(torch::kFloat);
      }
      out = out.masked_fill(count == 0, nan);  // a block of only masked cells
    }
  }

  out = out.to(torch::kCPU).contiguous();
  HeatmapData result;
  result.rows = rows;
  result.cols = cols;
  result.source_rows = src_rows;
  result.source_cols = src_cols;
  result.values.resize(static_cast<std::size_t>(rows * cols));
  if (!result.values.empty())
    std::memcpy(result.values.data(), out.data_ptr<float>(), result.values.size() * sizeof(float));
  return result;
}

HeatmapData heatmap_from_pooled(const at::Tensor& pooled, int64_t source_rows, int64_t source_cols) {
  if (!pooled.defined() || pooled.dim() != 2)
    throw Error("heatmap_from_pooled: expected a 2-D pooled map");
  const auto out = pooled.to(torch::kCPU, torch::kFloat).contiguous();
  HeatmapData result;
  result.rows = out.size(0);
  result.cols = out.size(1);
  result.source_rows = source_rows;
  result.source_cols = source_cols;
  result.values.resize(static_cast<std::size_t>(out.numel()));
  if (!result.values.empty())
    std::memcpy(result.values.data(), out.data_ptr<float>(), result.values.size() * sizeof(float));
  return result;
}

HeatmapData sink_share_heatmap(const at::Tensor& pooled, int64_t source_rows) {
  if (!pooled.defined() || pooled.dim() < 1 || pooled.dim() > 2)
    throw Error("sink_share_heatmap: expected a pooled sink share [rows] or [rows, 1]");
  auto column = heatmap_from_pooled(pooled.dim() == 1 ? pooled.unsqueeze(1) : pooled, source_rows, 1);
  column.title = "sink share";  // the pattern beside it names the head; the column is narrow
  column.col_labels = {"sink"};
  column.col_axis = "1 − Σ_j p_ij";
  column.value_name = "share of the row";
  column.kind = HeatmapKind::Probability;
  return column;
}

}  // namespace poslens
