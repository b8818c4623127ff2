#pragma once
// MXFP4 (OCP "Microscaling Formats (MX) Specification" v1.0, 2023, §5–6: FP4 E2M1 elements in
// blocks of 32 that share one E8M0 scale), the way gpt-oss ships its experts (OpenAI 2025,
// "gpt-oss-120b & gpt-oss-20b Model Card", arXiv 2508.10925 §2; HF transformers
// integrations/mxfp4.py, convert_moe_packed_tensors): a tensor X is stored as
//   X_blocks  uint8 [E, rows, G, 16]  two FP4 codes a byte, the low nibble first;
//   X_scales  uint8 [E, rows, G]      block g of row r is scaled by 2^(s − 127);
// and means X [E, G·32, rows] (HF dequantises to [E, rows, G·32] and transposes the last two:
// gate_up_proj [E, d_model, 2·d_mlp], down_proj [E, d_mlp, d_model]).
#include <ATen/core/Tensor.h>

#include <set>
#include <string>
#include <vector>

#include "core/formats/tensor_source.h"

namespace poslens {

/// The dequantised X of `blocks` (uint8 [E, rows, G, 16]) and `scales` (uint8 [E, rows, G]):
/// bfloat16 [E, G·32, rows], element (e, 32·g + 2·b + n, r) = fp4(nibble n of blocks[e, r, g, b])
/// · 2^(scales[e, r, g] − 127), fp4 codes 0–7 = 0, 0.5, 1, 1.5, 2, 3, 4, 6 and 8–15 their
/// negatives. Exact: every value is an FP4 code times a power of two, which bfloat16 holds.
/// Throws poslens::Error naming `name` when the dtypes or shapes are not those.
at::Tensor dequantize_mxfp4(const at::Tensor& blocks, const at::Tensor& scales, const std::string& name);

/// `inner` as the weight tables read it: every MXFP4 pair (X_blocks and X_scales, both U8,
/// blocks [E, rows, G, 16], scales [E, rows, G]) is one BF16 tensor X [E, G·32, rows],
/// dequantised when it is loaded (dequantize_mxfp4); every other tensor as stored. A source
/// without such pairs reads as itself. `inner` must outlive this.
class Mxfp4Dequantized : public TensorSource {
 public:
  /// Throws poslens::Error naming the tensor when an X_blocks in MXFP4's layout has no X_scales
  /// of the matching shape (a lone X_scales stays as stored, so loading names it unexpected).
  explicit Mxfp4Dequantized(const TensorSource& inner);
  /// How many MXFP4 pairs `inner` holds.
  size_t packed_count() const { return packed_.size(); }
  const std::vector<TensorInfo>& tensors() const override { return tensors_; }
  at::Tensor load(const std::string& name) const override;
  std::string describe() const override { return inner_.describe(); }
  void release(const std::string& name) const override;

 private:
  const TensorSource& inner_;
  std::vector<TensorInfo> tensors_;
  std::set<std::string> packed_;  ///< each X whose X_blocks and X_scales inner holds
};

}  // namespace poslens
