#pragma once
// Attention computed in blocks of query rows (docs/architecture.md "Long inputs: attention in
// blocks"), so no layer ever holds [head, T, T]:
//   - with map hooks wanted (patterns, logits, position terms, CoPE) a block is whole rows
//     [q_begin, q_end) × every key those rows may see, handed to the sinks as it is made;
//     memory O(head · rows · T), rows chosen from a byte budget. Where the fused kernel may
//     run (below), it gives the block's z and, for float32 models, the rows' log-sum-exp, so
//     the pattern is exp(scores − lse) and no pattern·v product is made;
//   - without them, where the scores are scale·q·k plus at most an additive term and the mask
//     (every encoding but CoPE and Shaw's value table) and LibTorch is 2.x, LibTorch's fused
//     kernel (scaled_dot_product_attention, fused_attention.h) computes the output: one call
//     for a plain causal or unmasked layer, else blocks of rows with the term as a float mask;
//   - otherwise keys are streamed in chunks with the online softmax (flash-attention's
//     recurrence: running row max m, normaliser l and output accumulator, rescaled by
//     exp(m_old − m_new) per chunk; Dao et al. 2022, Alg. 1), so memory is O(head · rows ·
//     chunk) whatever T. CoPE needs whole rows (p_ij sums every later key's gate) and keeps
//     the first form.
// A region of a map — some rows against some of their keys — is recomputed from the rows'
// log-sum-exp (row_lse): pattern_ij = exp(score_ij − lse_i), exact, without a softmax over
// whole rows (region()).
// Block sizes come from a byte budget: kAttentionBlockBytes on the CPU, a share of the free
// device memory on CUDA (attention_block_bytes).
// Every score term stays explicit (docs/formulas.md §1): content scale·q·k, the encoding's position and
// content terms for the block's (i, j), the mask, a float32 softmax, Shaw's value term.
// The same code recomputes one head's map, or a region of it, from LayerAttentionInputs kept
// after a run (the GUI's "recompute on demand").
#include <cstdint>
#include <functional>
#include <utility>

#include <ATen/core/Tensor.h>

#include "core/models/model_config.h"
#include "core/position/position_encoding.h"
#include "core/runtime/fused_attention.h"

namespace poslens {

/// What one layer's attention is computed from, O(T·d): handed to sinks that ask for it and
/// kept by the GUI to recompute any head's map later.
struct LayerAttentionInputs {
  int layer = 0;
  at::Tensor q;  ///< [batch, head, pos, d_head], after any rotation
  at::Tensor k;  ///< [batch, kv_head, key_pos, d_head], after any rotation; key_pos = pos except
                 ///< in cross-attention (non-causal config), where it is the encoder's length
  /// [batch, kv_head, pos, value_head_dim] (ModelConfig::value_head_dim(): d_head but for
  /// MLA); may stay undefined where only maps are recomputed and the
  /// encoding's scores do not read values (PositionEncoding::scores_read_values).
  at::Tensor v;
  /// Normalised block input [batch, pos, d_model]; only where the encoding's scores read it
  /// (CoPE sep-keys, PositionEncoding::scores_read_block_input).
  at::Tensor h;
  /// Added to the query and key indices the encoding's score terms see
  /// (ForwardOptions::position_offset); the mask reads the indices themselves.
  int64_t position_offset = 0;
  /// Learned sink logits, [n_heads] of the model (ModelConfig::attention_sinks, gpt-oss), or
  /// undefined. Each row's softmax then has one more term, exp(sink_h), in its normaliser:
  /// the patterns sum to 1 − sink share and the row_lse counts the sink.
  at::Tensor sinks;
};

/// Which outputs a block computes.
struct BlockRequest {
  bool scores = false;    ///< hook_attn_scores
  bool pattern = false;   ///< hook_pattern
  bool position = false;  ///< hook_pos_scores (where the encoding has a position term)
  bool cope = false;      ///< hook_cope_gates and hook_cope_pos (CoPE)
  bool z = false;         ///< the attention output
  bool any_map() const { return scores || pattern || position || cope; }
};

/// One block of whole query rows [q_begin, q_end) against keys [k_begin, k_end): every key the
/// rows may see lies inside. Map tensors are float32 [batch, head, rows, keys] on the model's
/// device, defined when requested (position and CoPE only where the encoding has them).
struct AttentionBlock {
  int64_t q_begin = 0, q_end = 0, k_begin = 0, k_end = 0;
  at::Tensor allowed;   ///< bool [rows, keys]: key visible to query
  at::Tensor scores;    ///< as fed to the softmax; masked entries −inf
  at::Tensor pattern;   ///< masked entries 0
  at::Tensor position;  ///< the position-only logit term; masked entries 0
  at::Tensor cope_gates, cope_positions;  ///< masked entries 0 (keys outside the block too)
  at::Tensor z;         ///< [batch, head, rows, value_head_dim] in the model's dtype
};

/// Block sizes; 0 picks them from kAttentionBlockBytes. Tests set small sizes to put block and
/// chunk boundaries everywhere.
struct AttentionBlocking {
  int64_t query_rows = 0;  ///< query rows per block
  int64_t key_chunk = 0;   ///< keys per chunk of the streamed (online softmax) path
  int64_t mlp_rows = 0;    ///< positions per chunk of the MLP (Transformer::forward; 0: from kMlpChunkBytes)

  /// The sizes of the environment variable POSLENS_ATTENTION_BLOCKS="ROWS,KEYS" (read once;
  /// ctest runs the model parity suites a second time with "3,5"; the MLP then runs in chunks
  /// of ROWS positions too), else 0, 0, 0. Throws
  /// poslens::Error when the variable is set to anything else.
  static AttentionBlocking from_environment();
};

/// bool [q1 − q0, k1 − k0] on `device`: true where query i may see key j (causal: j <= i;
/// sliding window: i − j < window, or |i − j| < window where ModelConfig::window_both_sides;
/// chunked: floor(i / c) = floor(j / c), c = ModelConfig::attention_chunk_size; otherwise every key; with ModelConfig::mask_first_key key 0 is hidden from every query but
/// query 0) — a block of allowed_keys().
at::Tensor allowed_block(const ModelConfig& config, int64_t q0, int64_t q1, int64_t k0, int64_t k1,
                         c10::Device device);

/// Bytes one float32 [batch, head, rows, keys] block tensor may take on the CPU; a block keeps
/// a few alive (scores, pattern, the encoding's terms).
inline constexpr int64_t kAttentionBlockBytes = int64_t{32} << 20;
/// Share of the free device memory one block tensor may take on CUDA (a block keeps about
/// four alive, the sinks' copies aside), between kAttentionBlockBytes and 2 GiB.
inline constexpr int64_t kCudaBlockShare = 16;

/// The byte budget of one block tensor on `device`: kAttentionBlockBytes on the CPU (and on
/// CUDA where the build cannot ask), free / kCudaBlockShare on CUDA, clamped as above.
int64_t attention_block_bytes(c10::Device device);
/// Bytes of one of the MLP's hidden activations ([batch, rows, d_mlp]) the forward pass
/// allows: longer inputs run the MLP over chunks of positions.
inline constexpr int64_t kMlpChunkBytes = int64_t{32} << 20;

/// One layer's attention for heads [head_begin, head_begin + head_count) of the model's.
class LayerAttention {
 public:
  /// `head_count` -1: every head from head_begin. Tensors stay on their device; the encoding
  /// must be the model's. Throws poslens::Error for shapes that disagree with `config` (a
  /// causal config needs as many keys as queries), a head range outside [0, n_heads), or
  /// inputs the encoding needs (v, h) missing.
  LayerAttention(const ModelConfig& config, const PositionEncoding& encoding,
                 const LayerAttentionInputs& inputs, int64_t head_begin = 0,
                 int64_t head_count = -1);

  int64_t length() const { return T_; }
  int64_t heads() const { return n_heads_; }

  /// The keys rows [q_begin, q_end) may see, as [first, last): causal models end at q_end, a
  /// sliding window starts at q_begin − window + 1 (and a window both ways ends at
  /// q_end + window − 1).
  std::pair<int64_t, int64_t> key_range(int64_t q_begin, int64_t q_end) const;

  /// Whole rows [q_begin, q_end) with the outputs `what` asks for. Throws poslens::Error for an
  /// empty or out-of-range row range.
  AttentionBlock rows(int64_t q_begin, int64_t q_end, const BlockRequest& what) const;

  /// The log-sum-exp of rows [q_begin, q_end) over every key they may see, float32 [batch,
  /// head, rows]: from the fused kernel where it may run (fused_attention.h), else from the
  /// online pass over key chunks (whole rows for CoPE). Throws as rows() does.
  at::Tensor row_lse(int64_t q_begin, int64_t q_end) const;

  /// Rows [q_begin, q_end) against keys [k_begin, k_end) only (clipped to key_range()), with
  /// the maps `what` asks for (not z); the pattern is exp(scores − lse) from `lse` =
  /// row_lse(q_begin, q_end) (only read when the pattern is asked for). CoPE's terms need whole rows: they are computed over them and
  /// cut. Equal to the same cells of rows(). Throws poslens::Error for ranges outside the
  /// layer, keys the rows cannot see, or an lse of another shape.
  AttentionBlock region(int64_t q_begin, int64_t q_end, int64_t k_begin, int64_t k_end,
                        const BlockRequest& what, const at::Tensor& lse) const;

  /// True when output() runs the fused kernel for a layer without maps under `blocking`
  /// (LibTorch 2.x, POSLENS_ATTENTION not "blocked", no CoPE or value term, no logit
  /// soft-capping (ModelConfig::attn_logit_softcap), no learned sinks (SDPA's softmax has no
  /// extra term), no gradients
  /// recorded (training keeps the blocked path), and no
  /// block sizes set by the caller or POSLENS_ATTENTION_BLOCKS).
  bool fused(const AttentionBlocking& blocking) const;

  /// The attention output of rows [q_begin, q_end), [batch, head, rows, d_head] in the model's
  /// dtype, over key chunks of `key_chunk` with the online softmax (see the file comment); one
  /// chunk is plain rows(). Encodings that need whole rows (CoPE) always get one chunk.
  at::Tensor z_streamed(int64_t q_begin, int64_t q_end, int64_t key_chunk) const;

  /// The whole layer's output [batch, pos, head, d_head] in the model's dtype, block by block.
  /// With `maps` asking for any map, blocks are whole rows and each is passed to `on_block`
  /// (in ascending order, covering every row once; its z undefined where fused(blocking):
  /// the fused kernel computes z then, and the float32 pattern is exp(scores − its lse));
  /// otherwise the fused kernel runs where fused(blocking), else keys are streamed.
  at::Tensor output(const BlockRequest& maps, const AttentionBlocking& blocking,
                    const std::function<void(const AttentionBlock&)>& on_block = {}) const;

  /// Query rows per block of whole rows for this layer under `blocking`.
  int64_t block_rows(const AttentionBlocking& blocking) const;

 private:
  struct Scores;
  /// Throws poslens::Error unless rows [q_begin, q_end) are a non-empty range inside [0, T).
  void check_rows(int64_t q_begin, int64_t q_end) const;
  /// True when autograd records this layer (grad mode on and q, k, v or h require grad).
  bool records_gradients() const;
  /// The positions, heads and cache of rows [q0, q1) × keys [k0, k1) the encoding sees, and
  /// `with_tensors` its q, k, v (query heads) and h.
  AttentionInputs block_inputs(int64_t q0, int64_t q1, int64_t k0, int64_t k1, bool with_tensors) const;
  /// Rows [q0, q1) by the fused kernel (whole rows: keys from key_range()).
  FusedAttention fused_rows(int64_t q0, int64_t q1, bool with_lse) const;
  /// The fused output of the whole layer [batch, pos, head, d_head].
  at::Tensor fused_output(const AttentionBlocking& blocking) const;
  /// The block's maps from its scores; pattern = exp(logits − lse) where `lse` is defined,
  /// else the softmax of the (whole-row) logits.
  AttentionBlock make_block(const Scores& s, const BlockRequest& what, const at::Tensor& lse) const;
  /// Scores and terms of rows [q0, q1) against keys [k0, k1), masked; the block's `allowed`
  /// mask is made when `need_allowed` (always where the encoding adds terms or autograd records).
  Scores block_scores(int64_t q0, int64_t q1, int64_t k0, int64_t k1, bool need_allowed) const;
  /// weights [B, H, rows, keys] (float32) times the values of keys [k0, k1) (+ the value
  /// term), float32 [B, H, rows, d_head].
  at::Tensor weighted_values(const at::Tensor& weights, const Scores& s) const;

  const ModelConfig& config_;
  const PositionEncoding& encoding_;
  int layer_;
  int64_t head_begin_, n_heads_, n_kv_, group_, T_, K_, B_, d_head_;  // T_ queries, K_ keys
  int64_t d_value_;  // config.value_head_dim(): z's width per head
  int64_t offset_;  // LayerAttentionInputs::position_offset
  at::Tensor q_, k_, v_, h_;  // q_ [B, heads, T, dh]; k_, v_ [B, n_kv, T, dh]; contiguous
  double scale_;
  double softcap_ = 0.0;     // config.attn_logit_softcap (0: none)
  at::Tensor sinks_;         // float32 [1, heads, 1] of this head range, or undefined
  bool terms_, value_term_;
  bool fused_;               // the fused kernel may compute this layer (fused() without blocking)
  bool fused_lse_;           // ... and its rows' log-sum-exp (row_lse)
  int64_t block_bytes_;      // attention_block_bytes(device)
  int64_t max_block_rows_;   // rows per block at most (the CPU's kMaxBlockRows; more on CUDA)
  mutable LayerCache cache_;
};

namespace reference {
/// Test reference (not on the runtime path): the attention of every head over the whole
/// [T, T] map at once, as PosLens computed it before blocking — float32 [batch, head, T, T]
/// logits (masked −inf), pattern and position term, and z [batch, pos, head, d_head]. The
/// blocked runtime must equal it to 1e-5.
struct WholeAttention {
  at::Tensor scores, pattern, position, cope_gates, cope_positions, z;
};
WholeAttention whole_attention(const ModelConfig& config, const PositionEncoding& encoding,
                               const LayerAttentionInputs& inputs);
}  // namespace reference

}  // namespace poslens
