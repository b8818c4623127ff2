#pragma once
// Shaw et al. 2018 relative position representations (Golovneva et al. 2024 eq. 1; tensor2tensor
// `dot_product_attention_relative`; docs/formulas.md §2 "Shaw relative"), causal form:
//   a_ij = softmax_j( q_i · (k_j + e[clip(i - j, 0, k_max)]) / sqrt(d) ),
//   o_i  = sum_j a_ij (v_j + ev[clip(i - j, 0, k_max)])        (optional value table)
// Tables are learned, [k_max + 1, d], shared across heads; row t is distance t, all distances
// >= k_max share row k_max. Keys in the future (i - j < 0) clip to row 0; the causal mask
// removes them. As in transformer_xl.h, with Q <= K query i sits at position i + (K - Q).
#include <cstdint>

#include <ATen/core/Tensor.h>

#include "core/position/components.h"

namespace poslens {

/// int64 [q_len, k_len] table of clip(i + (k_len - q_len) - j, 0, k_max).
/// Throws poslens::Error if k_max < 0, q_len < 0 or q_len > k_len.
at::Tensor shaw_relative_index(int64_t q_len, int64_t k_len, int64_t k_max, const at::Device& device = at::kCPU);
/// int64 [q, k] of clip(i - j, 0, k_max) for query positions `i` int64 [q] and key positions
/// `j` int64 [k], on i's device.
at::Tensor shaw_relative_index(const at::Tensor& i, const at::Tensor& j, int64_t k_max);

/// Key term q_i · e[clip(i - j, 0, k_max)] for q [B, H, Q, d] and e [k_max + 1, d]: [B, H, Q, k_len],
/// RAW (before the 1/sqrt(d) scale; the logits are (q·k + this)·scale and hook_pos_scores is
/// this·scale). k_max = e.size(0) - 1. Computed as z = q·e^T [B, H, Q, k_max+1] then gathered.
/// Throws poslens::Error on bad shapes or Q > k_len.
at::Tensor shaw_key_scores(const at::Tensor& q, const at::Tensor& e, int64_t k_len);
/// The same for the rows of q at positions `i` int64 [Q] against keys at positions `j` int64
/// [K]: [B, H, Q, K]. Throws poslens::Error on bad shapes.
at::Tensor shaw_key_scores(const at::Tensor& q, const at::Tensor& e, const at::Tensor& i,
                           const at::Tensor& j);

/// Value term sum_j a_ij · ev[clip(i - j, 0, k_max)] for attention probabilities
/// attn [B, H, Q, K] and ev [k_max + 1, d_v]: [B, H, Q, d_v] (added to attn·v). Probabilities
/// are first summed per distance bucket (scatter-add), then multiplied with ev.
/// Throws poslens::Error on bad shapes or Q > K.
at::Tensor shaw_value_term(const at::Tensor& attn, const at::Tensor& ev);
/// The same for weights of rows at positions `i` int64 [Q] over keys at positions `j` int64
/// [K] (any non-negative weights: linear in them). Throws poslens::Error on bad shapes.
at::Tensor shaw_value_term(const at::Tensor& attn, const at::Tensor& ev, const at::Tensor& i,
                           const at::Tensor& j);

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
  at::Tensor value_term(const AttentionInputs& in, const at::Tensor& weights) const override;
  bool has_value_term() const override { return !values_.empty(); }

 private:
  std::vector<at::Tensor> keys_, values_;
  bool shared_;
};

/// The "shaw" component of the PosLens format (docs/poslens-format.md): its parameters,
/// weights (with their initialisation) and checks.
ComponentRecipe shaw_recipe(const PositionComponentSpec& spec, const PositionContext& c);

}  // namespace poslens
