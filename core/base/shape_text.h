#pragma once
// Tensor shapes as text for error messages: "[64, 64]".
#include <string>

#include <ATen/core/Tensor.h>

namespace poslens {

inline std::string shape_str(at::IntArrayRef shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

inline std::string shape_str(const at::Tensor& t) { return shape_str(t.sizes()); }

}  // namespace poslens
