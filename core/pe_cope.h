#pragma once
// CoPE as a model component (seed 001 §4, Appendix B-C; facebookresearch/RAM projects/cope;
// SPEC.md §2): gates from the attention product (or separate gate keys, or values), contextual
// positions by reverse cumulative sum, and an interpolated position embedding or, for
// CoPE_ALiBi, a slope times the position. The kernel is cope.h.
#include <vector>

#include "core/cope.h"
#include "core/position_encoding.h"

namespace poslens {

/// Where CoPE's gate logits come from (seed 001 §4 and the reference's variants).
enum class CopeGateSource {
  Keys,     ///< q_i·k_j, the attention product itself (after any rotation)
  SepKeys,  ///< q_i·(W_g h_j), separate gate keys per query head
  Values,   ///< q_i·v_j
};
/// What CoPE adds for a contextual position p_ij.
enum class CopePositionTerm {
  Embedding,  ///< z_i[p_ij] = q_i·e[p_ij], interpolated (eq. 7-8)
  Alibi,      ///< m_h·p_ij (CoPE_ALiBi, Appendix C eq. 10)
};

/// One layer's CoPE weights; the ones the options do not use stay undefined.
struct CopeWeights {
  at::Tensor pos_emb;    ///< e, [d_head, npos_max]          (Embedding)
  at::Tensor gate_proj;  ///< W_g, [n_heads·d_head, d_model] (SepKeys)
  at::Tensor slopes;     ///< m_h, [n_heads]                 (Alibi)
};

struct CopeOptions {
  int64_t npos_max = 0;
  CopeGateSource gates = CopeGateSource::Keys;
  CopeLogitScale logit_scale = CopeLogitScale::DivideAll;
  CopePositionTerm position = CopePositionTerm::Embedding;
  bool shared = false;
};

class CopeEncoding : public PositionEncoding {
 public:
  /// One CopeWeights per layer. Throws poslens::Error if a weight the options need is missing
  /// or npos_max < 1.
  CopeEncoding(CopeOptions options, std::vector<CopeWeights> layers, int64_t n_heads,
               int64_t d_head);
  std::string describe() const override;
  /// Sets cope_gates and cope_positions [batch, head, q, k] and adds the position term
  /// (embedding: CopeOutput::pos_logits; alibi: m_h·p_ij) to `position`.
  void add_score_terms(const AttentionInputs& in, ScoreTerms& out) const override;
  bool has_position_scores() const override { return true; }
  bool has_cope() const override { return true; }

 private:
  CopeOptions options_;
  std::vector<CopeWeights> layers_;
  int64_t n_heads_, d_head_;
};

}  // namespace poslens
