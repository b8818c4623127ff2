#pragma once
// FP8 block quantisation as DeepSeek-V3, Kimi K2 and the Qwen3-*-FP8 models ship their weights
// (DeepSeek-AI 2024, "DeepSeek-V3 Technical Report", arXiv 2412.19437 §3.3.2, fine-grained
// quantisation; HF transformers' quant_method "fp8", integrations/finegrained_fp8.py): a weight
// W [..., R, C] is stored as
//   W                  F8_E4M3 [..., R, C]                     its FP8 codes;
//   W_scale_inv        F32 [..., ceil(R / b_r), ceil(C / b_c)] one scale per b_r × b_c block
// (`X_scale_inv` beside `X`: `model.layers.0.mlp.up_proj.weight_scale_inv`), the block size
// config.json's quantization_config.weight_block_size [b_r, b_c] (default [128, 128]); the last
// row and column blocks may be partial (DeepSeek's kv_a_proj_with_mqa: 576 rows in blocks of 128).
// W[..., r, c] = e4m3(code) · scale_inv[..., r / b_r, c / b_c] (DeepSeek's weight_dequant).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/formats/tensor_source.h"

namespace poslens {

/// quantization_config.weight_block_size: rows and columns of one scale's block.
struct Fp8BlockSize {
  int64_t rows = 128;
  int64_t cols = 128;
};

/// float32 [256]: each byte's value as FP8 E4M3 (OCP "8-bit Floating Point Specification" v1.0,
/// 2023, E4M3: sign, 4 exponent bits with bias 7, 3 mantissa bits; no infinities, S.1111.111 NaN),
/// subnormals m · 2^-9, the largest 448.
const at::Tensor& e4m3_values();

/// The dequantised W of `codes` (uint8 [..., R, C], FP8 E4M3 bytes) and `scale_inv` (floating
/// [..., ceil(R / b_r), ceil(C / b_c)]): float32 [..., R, C], element (…, r, c) =
/// e4m3_values()[codes[…, r, c]] · scale_inv[…, r / b_r, c / b_c], rounded once (float32).
/// Runs one row block at a time: its intermediates stay ~12 bytes per element of a block row.
/// Throws poslens::Error naming `name`, the shapes and the block size when they do not fit.
at::Tensor dequantize_fp8_blocks(const at::Tensor& codes, const at::Tensor& scale_inv, Fp8BlockSize block,
                                 const std::string& name);

/// `inner` as the weight tables read it: every F8_E4M3 tensor with its scale_inv is one F32
/// tensor of the same shape, dequantised when it is loaded (dequantize_fp8_blocks), its scale
/// hidden; every other tensor as stored. A source without F8_E4M3 tensors reads as itself.
/// `inner` must outlive this.
class Fp8BlockDequantized : public TensorSource {
 public:
  /// Throws poslens::Error naming the tensor when an F8_E4M3 tensor has no scale_inv, one of
  /// another shape than its blocks need (the block size named), or one that is not floating
  /// point (a lone scale_inv stays as stored, so loading names it unexpected).
  Fp8BlockDequantized(const TensorSource& inner, Fp8BlockSize block);
  /// How many F8_E4M3 tensors `inner` holds.
  size_t quantised_count() const { return scale_of_.size(); }
  const std::vector<TensorInfo>& tensors() const override { return tensors_; }
  at::Tensor load(const std::string& name) const override;
  std::string describe() const override { return inner_.describe(); }
  void release(const std::string& name) const override;

 private:
  const TensorSource& inner_;
  Fp8BlockSize block_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::string> scale_of_;  ///< each F8_E4M3 tensor's scale_inv
};

}  // namespace poslens
