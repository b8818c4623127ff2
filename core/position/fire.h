#pragma once
// FIRE: functional interpolation for relative position encoding (Li et al. 2024, ICLR;
// docs/formulas.md §2 "FIRE"; reference: the paper's PyTorch listing, module `FIRE`).
#include <cstdint>

#include <ATen/core/Tensor.h>

#include "core/position/components.h"
#include "core/position/relative_bias.h"

namespace poslens {

/// The learned parameters of one FIRE layer (the reference's `mlp`, `c`, `L_multiplier·init_L`).
struct FireParams {
  at::Tensor w1;  ///< [hidden, 1]   first Linear weight (hidden = mlp width, 32 in the paper)
  at::Tensor b1;  ///< [hidden]      first Linear bias
  at::Tensor w2;  ///< [n_heads, hidden] second Linear weight
  at::Tensor b2;  ///< [n_heads]     second Linear bias
  /// Learned scalars (tensors so that they train; any shape with one element, [1] as stored):
  at::Tensor c;      ///< log-transform scale (the reference's init_c = 0.1); its |c| is used
  at::Tensor l_thr;  ///< normalizer threshold L_multiplier·init_L (512); its |L_thr| is used
};

/// FIRE's epsilon added to the normalizer (the reference's eps), so i = 0 never divides by 0.
inline constexpr double kFireEps = 1e-6;

/// The additive logit bias, float32 [head, q_pos, k_pos]:
///   bias[h, r, j] = f(x)_h,   x = psi(i - j) / (psi(max(|L_thr|, i)) + kFireEps),
///   psi(t) = log(|c|·t + 1),   f(x) = W2·relu(W1·x + b1) + b2,
/// with i = k_len - q_len + r the absolute position of query row r (queries are the last q_len
/// positions). For future keys (j > i; masked anyway) the bias is 0 — the reference feeds
/// psi(|i - j|) through the MLP there; this choice keeps masked entries neutral. x is computed
/// in float64, the MLP in float32 on w1's device.
/// Throws poslens::Error if the weight shapes disagree (w1 [hidden,1], b1 [hidden],
/// w2 [H,hidden], b2 [H]), q_len < 1, k_len < 1 or q_len > k_len.
at::Tensor fire_bias(const FireParams& params, int64_t q_len, int64_t k_len);

/// The same for query positions `i` int64 [q] and key positions `j` int64 [k], heads
/// [head_begin, head_begin + n_heads) of the MLP's outputs (n_heads = -1: all): float32
/// [n_heads, q, k] on w1's device. Throws as fire_bias.
at::Tensor fire_bias(const FireParams& params, const at::Tensor& i, const at::Tensor& j,
                     int64_t head_begin = 0, int64_t n_heads = -1);

/// The normalised distances x of fire_bias, float64 [q_pos, k_pos] (0 where j > i), for views
/// that plot the MLP's input. Same arguments and errors as fire_bias (weights unused).
at::Tensor fire_normalized_distance(double c, double l_thr, int64_t q_len, int64_t k_len);
/// The same with c and L_thr as one-element tensors (differentiable in both), on c's device.
at::Tensor fire_normalized_distance(const at::Tensor& c, const at::Tensor& l_thr, int64_t q_len,
                                    int64_t k_len);
/// The same for positions `i` int64 [q] and `j` int64 [k], float64 [q, k] on c's device.
at::Tensor fire_normalized_distance(const at::Tensor& c, const at::Tensor& l_thr,
                                    const at::Tensor& i, const at::Tensor& j);

/// FIRE (Li et al. 2024) with one FireParams per layer. Causal models only (the normaliser
/// psi(max(L_thr, i)) is defined for keys up to the query).
class FireEncoding : public RelativeBiasEncoding {
 public:
  explicit FireEncoding(std::vector<FireParams> params, bool shared);
  std::string describe() const override;

 protected:
  at::Tensor bias(int layer, int64_t head_begin, int64_t n_heads, const at::Tensor& i,
                  const at::Tensor& j) const override;

 private:
  std::vector<FireParams> params_;
  bool shared_;
};

/// The "fire" component of the PosLens format (docs/poslens-format.md): its parameters,
/// weights (with their initialisation) and checks.
ComponentRecipe fire_recipe(const PositionComponentSpec& spec, const PositionContext& c);

}  // namespace poslens
