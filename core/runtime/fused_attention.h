#pragma once
// LibTorch's fused attention (scaled_dot_product_attention: flash or memory-efficient kernels
// on CUDA, the flash kernel on CPU), for layers whose scores are scale·q·kᵀ plus at most an
// additive term and a mask. The runtime uses it where no map of a layer is wanted
// (LayerAttention::output) and for the row log-sum-exp that map regions are recomputed from
// (LayerAttention::row_lse). LibTorch 1.13 has none of it: fused_attention_built() is false
// there and the blocked path runs.
#include <ATen/core/Tensor.h>

namespace poslens {

/// True when this build's LibTorch has scaled_dot_product_attention (2.0 or later).
bool fused_attention_built();

/// True when this build can also return the row log-sum-exp (LibTorch 2.3 or later).
bool fused_lse_built();

/// Whether the runtime may use the fused kernels: fused_attention_built() and the environment
/// variable POSLENS_ATTENTION is unset or "fused"; "blocked" forces the blocked path (ctest
/// runs the parity suites both ways). Read once. Throws poslens::Error for any other value.
bool fused_attention_enabled();

/// One fused call's result.
struct FusedAttention {
  at::Tensor z;    ///< [batch, head, rows, v's d_head] in the inputs' dtype
  at::Tensor lse;  ///< float32 [batch, head, rows]: log Σ_j exp(score_ij); defined when asked
};

/// softmax(scale·q·kᵀ + bias) v over one block of query rows.
///   q     [batch, head, rows, d_head]
///   k, v  [batch, kv_head, keys, d_head], head h reading kv head h / (head / kv_head) (GQA);
///         v's last size may differ (MLA's v_head_dim: v or q and k padded with zero channels)
///   bias  undefined, bool [rows, keys] (true: visible) or float [batch or 1, head or 1, rows,
///         keys] added to the scores (−inf hides a key; cast to q's dtype, as HF's SDPA path
///         does); every row must see at least one key
///   causal  key j visible to row i iff j <= i, both counted from the block's start (only for
///         a block that starts at row 0 with as many keys as rows; no bias then)
///   with_lse  also return the row log-sum-exp (CPU: the flash kernel's; CUDA: the
///         memory-efficient kernel's)
/// Vaswani et al. 2017 eq. 1 (arXiv:1706.03762); kernels: Dao et al. 2022 (arXiv:2205.14135),
/// Rabe & Staats 2021 (arXiv:2112.05682). Throws poslens::Error when the build has no fused
/// kernels or the lse is asked for on a device without them.
FusedAttention fused_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const at::Tensor& bias, bool causal, double scale, bool with_lse);

}  // namespace poslens
