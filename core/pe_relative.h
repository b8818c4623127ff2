#pragma once
// Relative encodings that read q (and k) as model components (SPEC.md §2): Shaw's clipped
// tables (shaw.h) and Transformer-XL's u, v and projected sinusoidal distances
// (transformer_xl.h). Their position terms go to hook_pos_scores on the score scale.
#include <vector>

#include "core/position_encoding.h"

namespace poslens {

/// Shaw et al. 2018, causal: logits += scale·q_i·e[clip(i-j, 0, k)], and z_i += sum_j a_ij
/// ev[clip(i-j, 0, k)] when value tables are given. One table per layer (possibly shared).
class ShawEncoding : public PositionEncoding {
 public:
  /// key_tables / value_tables: [k+1, d_head] per layer; value_tables empty for keys only.
  ShawEncoding(std::vector<at::Tensor> key_tables, std::vector<at::Tensor> value_tables,
               bool shared);
  std::string describe() const override;
  void add_score_terms(const AttentionInputs& in, ScoreTerms& out) const override;
  bool has_position_scores() const override { return true; }
  at::Tensor value_term(int layer, const at::Tensor& pattern) const override;

 private:
  std::vector<at::Tensor> keys_, values_;
  bool shared_;
};

/// Transformer-XL's weights for one layer (kimiyoung/transformer-xl RelPartialLearnable).
struct TxlWeights {
  at::Tensor r_proj;  ///< W_R, [n_heads·d_head, d_model] (the reference's r_net, no bias)
  at::Tensor u, v;    ///< [n_heads, d_head] (r_w_bias, r_r_bias)
};

/// Transformer-XL relative attention without memory:
///   logits = scale·((q_i + u)·k_j + (q_i + v)·W_R R_{i-j}),
/// R sinusoidal [sin | cos] over d_model. hook_pos_scores is the second term; (u·k)·scale is
/// added to the logits as content. Non-causal models use R_{|i-j|} (the seed's bi-directional
/// rel-shift).
class TransformerXlEncoding : public PositionEncoding {
 public:
  /// One TxlWeights per layer. Throws poslens::Error if shapes disagree with n_heads / d_head.
  TransformerXlEncoding(std::vector<TxlWeights> layers, int64_t n_heads, int64_t d_head,
                        bool causal, bool shared);
  std::string describe() const override;
  void add_score_terms(const AttentionInputs& in, ScoreTerms& out) const override;
  bool has_position_scores() const override { return true; }

 private:
  std::vector<TxlWeights> layers_;
  int64_t n_heads_, d_head_;
  bool causal_, shared_;
};

}  // namespace poslens
