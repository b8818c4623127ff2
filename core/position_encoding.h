#pragma once
// Position encodings as components (ARCHITECTURE.md): a block asks its encoding to act at the
// few places where position enters a transformer — the input (absolute terms, Heinsen's state),
// q and k (rotary), the attention logits (additive biases, Shaw, Transformer-XL, CoPE) and the
// attention output (Shaw's value table). One component per method of SPEC.md §2; a model's
// encoding is a list of them (CoPE+RoPE, CoPE+T5, ...) composed by ComposedEncoding.
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "core/model_config.h"
#include "core/model_weights.h"

namespace poslens {

/// What one attention layer gives the score terms. All attention tensors have the query-head
/// count (k and v already repeated for GQA).
struct AttentionInputs {
  int layer = 0;
  at::Tensor h;        ///< normalised block input [batch, pos, d_model] (CoPE sep-keys)
  at::Tensor q, k, v;  ///< [batch, head, pos, d_head], q and k after any rotation
  at::Tensor qk;       ///< raw q·k, float32 [batch, head, q_pos, k_pos]
  at::Tensor allowed;  ///< bool [q_pos, k_pos]: key j visible to query i
  double scale = 1.0;  ///< the model's attention scale (1/sqrt(d_head) unless configured)
  bool causal = true;
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

  /// Term added to the attention output z, [batch, head, q_pos, d_head], from the float32
  /// pattern [batch, head, q_pos, k_pos] (Shaw's value table); undefined when none.
  virtual at::Tensor value_term(int layer, const at::Tensor& pattern) const {
    (void)layer;
    (void)pattern;
    return {};
  }
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
  at::Tensor value_term(int layer, const at::Tensor& pattern) const override;

 private:
  std::vector<std::unique_ptr<PositionEncoding>> parts_;
};

/// The encoding a config selects: `config.pe_components` when set (the PosLens format),
/// otherwise `config.position` (HF and llama2.c checkpoints). Throws poslens::Error if a weight
/// it needs is missing or has the wrong shape, or a component's parameters are invalid,
/// naming the component and the weight.
std::unique_ptr<PositionEncoding> make_position_encoding(const ModelConfig& config,
                                                         const ModelWeights& weights);

}  // namespace poslens
