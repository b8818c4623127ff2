#pragma once
// Position encodings as components (docs/architecture.md "Position encodings"): a block asks its encoding to act at the
// few places where position enters a transformer — the input (absolute terms, Heinsen's state),
// q and k (rotary), the attention logits (additive biases, Shaw, Transformer-XL, CoPE) and the
// attention output (Shaw's value table). One component per method of docs/formulas.md §2; a model's
// encoding is a list of them (CoPE+RoPE, CoPE+T5, ...) composed by ComposedEncoding.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "core/position/rope_scaling.h"

namespace poslens {

/// Per-layer tensors that score terms compute once and reuse for every query block of the
/// layer (CoPE's sep-key gate keys, Transformer-XL's projected distance table): a layer is
/// computed in many blocks, and these cost O(T·d) each, not O(block).
class LayerCache {
 public:
  /// The tensor stored under `key`, made by `make()` the first time it is asked for.
  at::Tensor get(const std::string& key, const std::function<at::Tensor()>& make);

 private:
  std::map<std::string, at::Tensor> tensors_;
};

/// What attention gives the score terms for one block: query rows [q_begin, q_begin + rows)
/// of heads [head_begin, head_begin + heads) against keys [k_begin, k_begin + keys). Every
/// key the rows may see lies inside the block (whole rows) unless the runtime streams keys
/// in chunks (then the terms must depend only on (i, j) and the block's tensors, which all
/// terms except CoPE's do). All attention tensors have the block's query heads (k and v
/// repeated for GQA).
struct AttentionInputs {
  int layer = 0;
  int64_t head_begin = 0;  ///< the block's first head among the model's n_heads
  at::Tensor h;        ///< normalised block input of the WHOLE sequence [batch, pos, d_model]
                       ///< (CoPE sep-keys); undefined when the encoding does not read it
  at::Tensor q;        ///< [batch, head, rows, d_head], after any rotation
  at::Tensor k, v;     ///< [batch, head, keys, d_head], k after any rotation
  at::Tensor scores;   ///< scale·q·k, float32 [batch, head, rows, keys]
  at::Tensor allowed;  ///< bool [rows, keys]: key j visible to query i
  at::Tensor q_pos;    ///< int64 [rows]: absolute positions of the rows (q_begin + r)
  at::Tensor k_pos;    ///< int64 [keys]: absolute positions of the keys (k_begin + c)
  int64_t q_begin = 0, k_begin = 0;
  int64_t length = 0;  ///< T, positions of the whole sequence
  double scale = 1.0;  ///< the model's attention scale (1/sqrt(d_head) unless configured)
  bool causal = true;
  LayerCache* cache = nullptr;  ///< the layer's cache (never null from the runtime)

  int64_t heads() const { return q.size(1); }
  /// cache->get(key, make), or make() without a cache.
  at::Tensor cached(const std::string& key, const std::function<at::Tensor()>& make) const;
};

/// Terms a component adds to the logits, all float32 [batch or 1, head, q_pos, k_pos].
/// Components accumulate into these (ScoreTerms::add) so that several compose.
struct ScoreTerms {
  at::Tensor position;    ///< position-only term on the score scale (hook_pos_scores)
  at::Tensor content;     ///< other added terms (Transformer-XL's u·k): in the logits, not in
                          ///< hook_pos_scores
  at::Tensor cope_gates;  ///< CoPE g_ij (hook_cope_gates)
  at::Tensor cope_positions;  ///< CoPE p_ij (hook_cope_pos)
  /// Adds `term` to `slot` (which may still be undefined).
  static void add(at::Tensor& slot, const at::Tensor& term);
};

/// The model-level result of the input stage.
struct InputTerm {
  at::Tensor added;     ///< [batch, pos, d_model] added to the token embeddings (hook_pos_embed)
  at::Tensor pe_state;  ///< Heinsen's s [batch, pos, d_pe] (hook_pe_state), else undefined
};

/// What an analysis needs of a rotary encoding (RoPE with any scaling, HoPE): docs/formulas.md §3.
struct RotaryInfo {
  RopePairing pairing = RopePairing::HalfSplit;
  int64_t rotary_dim = 0;  ///< dims rotated per head (d_head unless partial rotary)
  int64_t d_head = 0;
  /// theta_c, c = 0..rotary_dim/2-1, after scaling (linear, dynamic, yarn, llama3, longrope),
  /// float64 [rotary_dim/2] on the CPU, radians per position.
  at::Tensor theta;
  double attention_factor = 1.0;  ///< multiplies cos and sin (yarn, longrope), else 1
  /// Components 0..kept-1 rotate; the rest pass unrotated (HoPE's cut, Chen et al. 2024 §4.2.2);
  /// rotary_dim/2 for RoPE.
  int64_t kept_components = 0;
};

class CopeEncoding;

class PositionEncoding {
 public:
  virtual ~PositionEncoding() = default;
  /// Human-readable name with parameters, e.g. "RoPE (interleaved pairs, rope_theta=10000)".
  virtual std::string describe() const = 0;

  /// Absolute encodings: the term added to the token embeddings `tok` [batch, pos, d_model] at
  /// `positions` (int64 [pos]). Fields stay undefined when the encoding adds nothing.
  /// Throws poslens::Error if a position is beyond what the encoding knows (learned tables).
  virtual InputTerm input_term(const at::Tensor& tok, const at::Tensor& positions) const {
    (void)tok;
    (void)positions;
    return {};
  }
  /// True when input_term() adds something (so hook_pos_embed exists).
  virtual bool has_input_term() const { return false; }
  /// True when input_term() yields Heinsen's state (so hook_pe_state exists).
  virtual bool has_pe_state() const { return false; }

  /// Rotary encodings: true when rotate() changes q/k (so hook_rot_q/hook_rot_k exist).
  virtual bool rotates() const { return false; }
  /// Rotates `x` [batch, pos, head, d_head] by its positions (int64 [pos]). Identity by default.
  virtual at::Tensor rotate(const at::Tensor& x, const at::Tensor& positions) const {
    (void)positions;
    return x;
  }

  /// Adds this encoding's logit terms for `in.layer` to `out`. Nothing by default.
  virtual void add_score_terms(const AttentionInputs& in, ScoreTerms& out) const {
    (void)in;
    (void)out;
  }
  /// True when add_score_terms() sets `position` (so hook_pos_scores exists).
  virtual bool has_position_scores() const { return false; }
  /// True when add_score_terms() sets the CoPE fields (hook_cope_gates, hook_cope_pos).
  virtual bool has_cope() const { return false; }

  /// Term added to the attention output z, float32 [batch, head, rows, d_head], from float32
  /// attention weights [batch, head, rows, keys] of the block `in` (Shaw's value table). The
  /// term is linear in the weights, so the runtime may pass unnormalised weights of a key chunk
  /// (online softmax) and rescale the sum. Undefined when none.
  virtual at::Tensor value_term(const AttentionInputs& in, const at::Tensor& weights) const {
    (void)in;
    (void)weights;
    return {};
  }
  /// True when value_term() adds something.
  virtual bool has_value_term() const { return false; }
  /// True when add_score_terms() reads AttentionInputs::h (CoPE sep-keys) or v (CoPE
  /// val-gates): whoever recomputes maps later must keep them.
  virtual bool scores_read_block_input() const { return false; }
  virtual bool scores_read_values() const { return false; }
  /// True when add_score_terms() needs every visible key of a row at once (CoPE's cumulative
  /// gate sum): such layers are never computed in key chunks.
  virtual bool needs_whole_rows() const { return false; }

  // ---- What analyses read (docs/formulas.md §3), without running the model ----

  /// The input-independent position-only logit term of layer `layer` for a T-token input, on
  /// the score scale, float32 [head, q_pos, k_pos] (ALiBi, T5, KERPLE, FIRE; entries of keys
  /// the mask hides are whatever the formula gives there). Undefined when the encoding has none
  /// or its term depends on the input (CoPE, Shaw, Transformer-XL: use hook_pos_scores).
  virtual at::Tensor static_position_scores(int layer, int64_t T) const {
    (void)layer;
    (void)T;
    return {};
  }
  /// Rotary encodings: pairing, rotary_dim and the scaled theta_c for a `seq_len`-token input
  /// (only dynamic NTK and longrope depend on it; 0 = the training length). nullopt otherwise.
  virtual std::optional<RotaryInfo> rotary_info(int64_t seq_len = 0) const {
    (void)seq_len;
    return std::nullopt;
  }
  /// The CoPE component (its options and per-layer pos_emb, gate projection and slopes:
  /// cope.h), or null.
  virtual const CopeEncoding* cope() const { return nullptr; }
  /// Absolute tables (learned, sinusoidal): the term added at positions 0..n_pos-1, float32
  /// [n_pos, d_model] on the model's device. Undefined for other encodings (Heinsen's term
  /// depends on the tokens). Throws poslens::Error when n_pos exceeds a learned table.
  virtual at::Tensor position_table(int64_t n_pos) const {
    (void)n_pos;
    return {};
  }
};

/// NoPE: the model sees position only through the causal mask.
class NoPositionEncoding : public PositionEncoding {
 public:
  std::string describe() const override { return "NoPE (no position encoding)"; }
};

/// Several components acting together; each stage sums (or chains, for rotations) theirs.
class ComposedEncoding : public PositionEncoding {
 public:
  /// Throws poslens::Error if two components rotate, two add an input term or two are CoPE.
  explicit ComposedEncoding(std::vector<std::unique_ptr<PositionEncoding>> parts);
  std::string describe() const override;
  InputTerm input_term(const at::Tensor& tok, const at::Tensor& positions) const override;
  bool has_input_term() const override;
  bool has_pe_state() const override;
  bool rotates() const override;
  at::Tensor rotate(const at::Tensor& x, const at::Tensor& positions) const override;
  void add_score_terms(const AttentionInputs& in, ScoreTerms& out) const override;
  bool has_position_scores() const override;
  bool has_cope() const override;
  at::Tensor value_term(const AttentionInputs& in, const at::Tensor& weights) const override;
  bool has_value_term() const override;
  bool scores_read_block_input() const override;
  bool scores_read_values() const override;
  bool needs_whole_rows() const override;
  /// The sum of the parts' static scores (undefined when no part has any).
  at::Tensor static_position_scores(int layer, int64_t T) const override;
  std::optional<RotaryInfo> rotary_info(int64_t seq_len = 0) const override;
  const CopeEncoding* cope() const override;
  at::Tensor position_table(int64_t n_pos) const override;
  const std::vector<std::unique_ptr<PositionEncoding>>& parts() const { return parts_; }

 private:
  std::vector<std::unique_ptr<PositionEncoding>> parts_;
};

}  // namespace poslens
