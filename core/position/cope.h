#pragma once
// Contextual Position Encoding, CoPE (Golovneva et al. 2024 §4 and Appendix B;
// facebookresearch/RAM projects/cope; docs/formulas.md §2 "CoPE").
//
//   g_ij = sigmoid(gate_logit_ij · scale) · allowed_ij      (masked gates are exactly 0)
//   p_ij = min(sum_{t=j..T_k-1} g_it, npos_max - 1)          (reverse cumulative sum over keys)
//   z_i[p] = q_i · e[p] for integer p, linear between floor(p_ij) and ceil(p_ij)  (eq. 7-8)
// With the causal mask the sum runs over t = j..i (seed eq. 4). With all gates 1 it has
// i - j + 1 terms, so p_ij = i - j + 1: the token relative position PLUS ONE — the query's own
// key counts, the diagonal sits at p = 1 and p = 0 is reached only by keys whose gates (and
// those of every later key) are 0 (Golovneva et al. 2024 §4: "if the gates are always 1, then
// p_ij = i - j + 1"; the reference's flip-cumsum-flip does the same). Masked keys j > i get
// p_ij = 0 since all their gates are 0.
// gate_logit is q_i·k_j (the default, reusing the attention product), W_g h_j-keys (sep-keys)
// or values (val-gates): the caller passes the raw logits, so all variants share this code.
#include <ATen/core/Tensor.h>

#include "core/position/components.h"

namespace poslens {

/// Where 1/sqrt(d) goes in the logits (both named in the model config, docs/formulas.md §2).
enum class CopeLogitScale {
  /// (q_i·k_j + z_i[p_ij]) · scale — the official facebookresearch/RAM default.
  DivideAll,
  /// q_i·k_j · scale + z_i[p_ij] — the paper's Listing 1 ("no-div").
  NoDiv,
};

/// All [B, H, Q, K] float tensors.
struct CopeOutput {
  at::Tensor gates;       ///< g_ij, exactly 0 where masked (hook_cope_gates)
  at::Tensor positions;   ///< p_ij after clamping to npos_max - 1 (hook_cope_pos)
  at::Tensor pos_logits;  ///< interpolated z_i[p_ij] on the score scale: z·scale for
                          ///< DivideAll, z for NoDiv; 0 where masked (hook_pos_scores)
};

/// gate_logits [B, H, Q, K] raw (unscaled) gate logits; q [B, H, Q, d]; pos_emb [d, npos_max]
/// (shared by heads; the reference stores it as [1, d, npos_max]); causal: mask keys
/// j > i + (K - Q) (their gates become exactly 0); scale: usually 1/sqrt(d), applied to the gate
/// logits (docs/formulas.md §2: sigmoid(gate_logit / sqrt(d))) and, for DivideAll, to z.
/// Computed in q's dtype. Throws poslens::Error on bad shapes, npos_max < 1, Q > K when causal.
CopeOutput cope_positions(const at::Tensor& gate_logits, const at::Tensor& q,
                          const at::Tensor& pos_emb, bool causal, double scale,
                          CopeLogitScale mode = CopeLogitScale::DivideAll);

/// The same from gates already computed, for one block of whole rows: gates float [B, H, Q, K]
/// (0 where `allowed` [Q, K] is false; undefined: every key visible), q [B, H, Q, d] the rows'
/// queries, z_scale the factor on z (scale for DivideAll, 1 for NoDiv). Masked entries of
/// positions and z are 0. The positions and z come from cope_interpolate (one fused pass on the
/// CPU).
CopeOutput cope_from_gates(const at::Tensor& gates, const at::Tensor& q, const at::Tensor& pos_emb,
                           const at::Tensor& allowed, double z_scale);

/// Test references (not on the runtime path): a second, direct form of a formula the runtime
/// computes elsewhere, kept so tests can check the runtime against it. Never call from core.
namespace reference {
/// The logits before masking: qk · scale + cope.pos_logits, which is (qk + z)·scale for
/// DivideAll and qk·scale + z for NoDiv. qk [B, H, Q, K] raw q_i·k_j.
/// Throws poslens::Error if shapes differ.
at::Tensor cope_attention_logits(const at::Tensor& qk, const CopeOutput& cope, double scale);
}  // namespace reference

/// CoPE_ALiBi position term (Golovneva et al. 2024 Appendix C eq. 10, a_ij = softmax(q_i·k_j + m·p_ij)):
/// + m_h · p_ij, with the sign the paper writes: a positive slope RAISES the logits of keys at
/// larger contextual distance, so an ALiBi-like decay needs negative slopes (learned or given).
/// positions [B, H, Q, K] (CopeOutput::positions), slopes [H]. Returns [B, H, Q, K], added to
/// the scaled logits as is (eq. 10 has no 1/sqrt(d) on it). Masked entries have p = 0 -> 0.
/// Throws poslens::Error if slopes is not [H].
at::Tensor cope_alibi_term(const at::Tensor& positions, const at::Tensor& slopes);

/// Where CoPE's gate logits come from (Golovneva et al. 2024 §4 and the reference's variants).
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
  bool needs_whole_rows() const override { return true; }  // p_ij sums every later key's gate
  bool scores_read_block_input() const override { return options_.gates == CopeGateSource::SepKeys; }
  bool scores_read_values() const override { return options_.gates == CopeGateSource::Values; }
  const CopeEncoding* cope() const override { return this; }
  const CopeOptions& options() const { return options_; }
  /// Layer `layer`'s weights (pos_emb [d_head, npos_max], gate_proj, slopes [n_heads]).
  const CopeWeights& layer_weights(int layer) const { return layers_.at(static_cast<size_t>(layer)); }

 private:
  CopeOptions options_;
  std::vector<CopeWeights> layers_;
  int64_t n_heads_, d_head_;
};

/// The "cope" component of the PosLens format (docs/poslens-format.md): its parameters,
/// weights (with their initialisation) and checks.
ComponentRecipe cope_recipe(const PositionComponentSpec& spec, const PositionContext& c);

}  // namespace poslens
