#pragma once
// Max-pooling of maps that arrive block by block — the one home of the rule every pooled view
// uses: the pooled sinks (sinks.h), the position maps (analysis/position_map.h), the GUI's head
// and region maps and the whole-map pooling of analysis/heatmap_pooling.h. A canvas of −inf
// cells; each block max-pooled into it with its hidden entries ignored; NaN, when finished,
// where nothing visible fell.
#include <cstdint>

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

namespace poslens {

/// The stride that pools a T-long side to at most `cells` per side: ceil(T / cells), 1 when
/// T <= cells.
int64_t pool_stride(int64_t T, int64_t cells);

/// An empty canvas for a `rows` × `cols` map pooled with `stride`: float32 [leading...,
/// ceil(rows / stride), ceil(cols / stride)] of −inf on the CPU.
at::Tensor pooled_canvas(c10::IntArrayRef leading, int64_t rows, int64_t cols, int64_t stride);

/// Max-pools a block into `pooled` (a canvas): `values` [..., rows, keys] with `allowed` bool
/// [rows, keys] holds rows [q_begin, ...) and keys [k_begin, ...) of the map; cells are
/// stride × stride, hidden entries ignored. The leading dimensions of `values` and `pooled`
/// match.
void max_pool_block(at::Tensor& pooled, const at::Tensor& values, const at::Tensor& allowed,
                    int64_t q_begin, int64_t k_begin, int64_t stride);

/// A canvas as views draw it: NaN where nothing visible was pooled (its −inf cells).
at::Tensor finished_pooled(const at::Tensor& pooled);

}  // namespace poslens
