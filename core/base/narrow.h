#pragma once
// A narrow that is free when it covers the whole dimension.
#include <ATen/core/Tensor.h>

namespace poslens {

/// t.narrow(dim, start, length), or t itself when that is all of dimension `dim`. Under autograd
/// a narrow's backward allocates a zero tensor of t's size and copies the gradient into it; a
/// small model's training step spent ~15 % of its time there while every layer narrowed whole
/// tensors (measured with tools/profile_ops.py, docs/experiments.md "Training speed").
inline at::Tensor narrow_unless_whole(const at::Tensor& t, int64_t dim, int64_t start, int64_t length) {
  return start == 0 && length == t.size(dim) ? t : t.narrow(dim, start, length);
}

}  // namespace poslens
