#pragma once
// ALiBi: attention with linear biases (Press et al. 2022; docs/formulas.md §2 "ALiBi";
// reference: ofirpress/attention_with_linear_biases, HF `build_alibi_tensor`).
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "core/position/components.h"
#include "core/position/relative_bias.h"

namespace poslens {

/// The per-head slopes m_h, h = 0..n_heads-1 (dimensionless, logit units per token of distance).
///   Power-of-two H:  m_h = 2^(-8(h+1)/H)  (H=8: 1/2, 1/4, ..., 1/256).
///   Otherwise (the reference's interleaving rule): with P = 2^floor(log2 H), the P slopes of
///   the power-of-two rule for P, then every other slope (indices 0, 2, 4, ...) of the rule for
///   2P, taking the first H - P of them (H=12: the 8-head slopes, then 2^-0.5, 2^-1.5, 2^-2.5,
///   2^-3.5).
/// Throws poslens::Error if n_heads < 1.
std::vector<double> alibi_slopes(int64_t n_heads);

/// MPT's slopes (mosaicml llm-foundry `gen_slopes`, HF modeling_mpt `build_mpt_alibi_tensor`):
/// with P = 2^ceil(log2 H), m_k = 2^(-bias_max·k/P) for k = 1..P; for a power-of-two H that is
/// alibi_slopes(H) when bias_max is 8. Otherwise the odd-indexed slopes (m_2, m_4, ...) come
/// first, then the even-indexed ones (m_1, m_3, ...), cut to H (H=6, bias_max 8: 2^-2, 2^-4,
/// 2^-6, 2^-8, 2^-1, 2^-3 — the same list as alibi_slopes(6); other bias_max values differ).
/// HF's MptModel always uses bias_max 8; llm-foundry reads attn_config.alibi_bias_max, as we do.
/// Throws poslens::Error if n_heads < 1 or bias_max <= 0.
std::vector<double> alibi_slopes_mpt(int64_t n_heads, double bias_max);

/// The additive logit bias, float32 [head, q_pos, k_pos]:
///   bias[h, r, j] = -m_h·(i - j)  for j <= i,   0 for j > i (future keys; masked anyway),
/// where i = k_len - q_len + r is the absolute position of query row r (queries are the last
/// q_len of the k_len positions; i = r when q_len == k_len). Not divided by sqrt(d).
/// Throws poslens::Error if slopes is empty, q_len < 1, k_len < 1 or q_len > k_len.
at::Tensor alibi_bias(const std::vector<double>& slopes, int64_t q_len, int64_t k_len);

/// The same for query positions `i` int64 [q] and key positions `j` int64 [k] (any device),
/// float32 [head, q, k] on i's device: -m_h·max(i - j, 0), or -m_h·|i - j| when `symmetric`.
/// Throws poslens::Error if slopes is empty.
at::Tensor alibi_bias(const std::vector<double>& slopes, const at::Tensor& i, const at::Tensor& j,
                      bool symmetric = false);

/// ALiBi (Press et al. 2022): -m_h (i - j) with the given slopes (alibi_slopes or
/// alibi_slopes_mpt). Non-causal models get the symmetric -m_h |i - j| (the usual bidirectional
/// form); no weights. BLOOM and MPT add m_h·j (a key-position bias) instead of -m_h (i - j):
/// the two differ by m_h·i, constant along each query row, so the patterns are identical and
/// only hook_attn_scores differs by that row constant (docs/architecture.md).
class AlibiEncoding : public RelativeBiasEncoding {
 public:
  /// Throws poslens::Error if slopes is empty.
  AlibiEncoding(std::vector<double> slopes, bool causal);
  std::string describe() const override;

 protected:
  at::Tensor bias(int layer, int64_t head_begin, int64_t n_heads, const at::Tensor& i,
                  const at::Tensor& j) const override;

 private:
  std::vector<double> slopes_;
  bool causal_;
};

/// The "alibi" component of the PosLens format (docs/poslens-format.md): its parameters,
/// weights (with their initialisation) and checks.
ComponentRecipe alibi_recipe(const PositionComponentSpec& spec, const PositionContext& c);

}  // namespace poslens
