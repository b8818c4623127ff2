#pragma once
// Tensors held in memory as a TensorSource, so that tensors made in a program (fresh weights,
// weights moved between devices, a test's hand-made file) go through the same loader and checks
// as tensors read from a file.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/formats/tensor_source.h"

namespace poslens {

class MemoryTensors : public TensorSource {
 public:
  /// `what` is describe()'s text for error messages ("freshly initialised weights").
  explicit MemoryTensors(std::string what) : what_(std::move(what)) {}
  /// Adds `t` under `name`, declared as `dtype` (the dtype a file would declare: F8_E4M3 for
  /// raw FP8 bytes held as uint8; F32 by default).
  void add(const std::string& name, const at::Tensor& t, StoredDType dtype = StoredDType::F32) {
    infos_.push_back({name, dtype, t.sizes().vec()});
    tensors_[name] = t;
  }
  const std::vector<TensorInfo>& tensors() const override { return infos_; }
  at::Tensor load(const std::string& name) const override { return tensors_.at(name); }
  std::string describe() const override { return what_; }

 private:
  std::string what_;
  std::vector<TensorInfo> infos_;
  std::map<std::string, at::Tensor> tensors_;
};

}  // namespace poslens
