#pragma once
// FP8 weights with float scales, as the two ways FP8 checkpoints are published store them.
//
// quant_method "fp8" (DeepSeek-AI 2024, "DeepSeek-V3 Technical Report", arXiv 2412.19437 §3.3.2,
// fine-grained quantisation; DeepSeek-V3/R1, Kimi K2, Qwen3-*-FP8; HF transformers
// integrations/finegrained_fp8.py): a weight W [..., R, C] is stored as
//   W                  F8_E4M3 [..., R, C]                     its FP8 codes;
//   W_scale_inv        F32 [..., ceil(R / b_r), ceil(C / b_c)] one scale per b_r × b_c block
// (`X_scale_inv` beside `X`: `model.layers.0.mlp.up_proj.weight_scale_inv`), the block size
// config.json's quantization_config.weight_block_size [b_r, b_c] (default [128, 128]); the last
// row and column blocks may be partial (DeepSeek's kv_a_proj_with_mqa: 576 rows in blocks of 128).
// W[..., r, c] = e4m3(code) · scale_inv[..., r / b_r, c / b_c] (DeepSeek's weight_dequant).
//
// quant_method "compressed-tensors", format "float-quantized" (vLLM's compressed-tensors library,
// as llm-compressor saves RedHat's / Neural Magic's "-FP8", "-FP8-dynamic" and "-FP8-block"
// releases): `X.weight` F8_E4M3 beside `X.weight_scale`, one scale per tensor ([1]), per output
// channel ([R, 1]), per group of g input columns ([R, ceil(C / g)]) or per block
// (block_structure [b_r, b_c]), as each config group's weights.strategy says; the same product.
// Their activation scales (`input_scale`, `output_scale`, the KV cache's `k_scale` / `v_scale`)
// quantise activations at inference; PosLens runs the dequantised weights in --dtype, as HF
// transformers' CPU forward of such a folder does, and leaves those scales unread.
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

/// How one weight's scales tile it (compressed-tensors' QuantizationStrategy; "fp8" is Block).
struct Fp8Strategy {
  enum class Kind { Tensor, Channel, Group, Block };
  Kind kind = Kind::Block;
  Fp8BlockSize block;  ///< Block: one scale's rows × columns; Group: cols is the group size
  /// The block one scale covers in a weight of R rows and C columns.
  Fp8BlockSize block_for(int64_t R, int64_t C) const;
  /// "in blocks of [128, 128]", "per tensor", "per output channel", "in groups of 128".
  std::string text() const;
};

/// What config.json's quantization_config says of the FP8 weights (quantization_config.h reads it).
struct Fp8Scaling {
  std::string scale_suffix = "_scale_inv";               ///< "fp8": X_scale_inv; compressed-tensors: X_scale
  std::vector<Fp8Strategy> strategies = {Fp8Strategy{}};  ///< the tilings a weight's scale may have
  std::string origin = "weight_block_size";              ///< where they came from, for messages
  bool activation_scales = false;  ///< compressed-tensors: input / output / k / v scales, left unread
};

/// float32 [256]: each byte's value as FP8 E4M3 (OCP "8-bit Floating Point Specification" v1.0,
/// 2023, E4M3: sign, 4 exponent bits with bias 7, 3 mantissa bits; no infinities, S.1111.111 NaN),
/// subnormals m · 2^-9, the largest 448.
const at::Tensor& e4m3_values();

/// The dequantised W of `codes` (uint8 [..., R, C], FP8 E4M3 bytes) and `scale_inv` (floating
/// [..., ceil(R / b_r), ceil(C / b_c)]): `out_dtype` [..., R, C], element (…, r, c) =
/// e4m3_values()[codes[…, r, c]] · scale_inv[…, r / b_r, c / b_c], the product in float32, then
/// converted (bfloat16 / float16: the values float32's result .to(out_dtype) would give, without
/// a float32 copy of the whole weight).
/// Runs ~1M elements at a time: its intermediates stay ~20 MB whatever the block.
/// Throws poslens::Error naming `name`, the shapes and the block size when they do not fit.
at::Tensor dequantize_fp8_blocks(const at::Tensor& codes, const at::Tensor& scale_inv, Fp8BlockSize block,
                                 const std::string& name, c10::ScalarType out_dtype = c10::kFloat);

/// `inner` as the weight tables read it: every F8_E4M3 tensor with its scale is one tensor of the
/// same shape in `dtype` (float32, bfloat16 or float16: the dtype the model loads in, so no float32
/// copy of a weight is made), dequantised when it is loaded (dequantize_fp8_blocks, the block its
/// scale's shape and `scaling.strategies` give), its scale hidden; with
/// `scaling.activation_scales` the activation scales hidden too; every other tensor as stored. A
/// source without F8_E4M3 tensors reads as itself. `inner` must outlive this.
class Fp8Dequantized : public TensorSource {
 public:
  /// Throws poslens::Error naming the tensor when an F8_E4M3 tensor has no scale, one whose shape
  /// no strategy gives (the strategies and the shapes they need named), one two strategies read
  /// differently, or one that is not floating point (a lone scale stays as stored, so loading
  /// names it unexpected).
  Fp8Dequantized(const TensorSource& inner, Fp8Scaling scaling, c10::ScalarType dtype = c10::kFloat);
  /// How many F8_E4M3 tensors `inner` holds.
  size_t quantised_count() const { return quantised_.size(); }
  /// For the model's description: "132 weights dequantised, in blocks of [128, 128]"; with several
  /// tilings each one's count ("14 weights dequantised, 3 in blocks of [16, 12], 7 per output
  /// channel, 4 per tensor; 4 activation scales unread"); empty without F8_E4M3 tensors.
  std::string summary() const;
  const std::vector<TensorInfo>& tensors() const override { return tensors_; }
  at::Tensor load(const std::string& name) const override;
  std::string describe() const override { return inner_.describe(); }
  void release(const std::string& name) const override;

 private:
  struct Quantised {
    std::string scale;  ///< its scale's tensor
    Fp8Strategy strategy;  ///< how its scale tiles it
  };
  const TensorSource& inner_;
  Fp8Scaling scaling_;
  c10::ScalarType dtype_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, Quantised> quantised_;  ///< each F8_E4M3 tensor
  size_t activation_scales_ = 0;                ///< hidden, unread
};

}  // namespace poslens
