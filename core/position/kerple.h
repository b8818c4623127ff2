#pragma once
// KERPLE: kernelized relative positional bias (Chi et al. 2022; docs/formulas.md §2 "KERPLE";
// reference: chijames/KERPLE).
#include <cstdint>
#include <string>

#include <ATen/core/Tensor.h>

#include "core/position/components.h"
#include "core/position/relative_bias.h"

namespace poslens {

enum class KerpleVariant {
  Log,    ///< bias = -p_h · log(1 + a_h · (i - j))
  Power,  ///< bias = -a_h · (i - j)^p_h
};

/// "log" / "power".
std::string to_string(KerpleVariant variant);

/// The additive logit bias, float32 [head, q_pos, k_pos], for the causal distance
/// i - j >= 0 (i = k_len - q_len + r for query row r: queries are the last q_len positions).
/// p and a are float [n_heads] (the learned per-head parameters; the reference stores them as
/// [heads, 1, 1]: pass them flattened) and are clamped to >= 1e-2 before use, as the reference
/// does. Future keys (j > i) get 0 (they are masked anyway): both formulas give 0 at distance 0
/// and the distance is clamped to 0 there. Computed in float64, returned as float32 on p's device.
/// Throws poslens::Error if p and a are not 1-D of the same size >= 1, q_len < 1, k_len < 1 or
/// q_len > k_len.
at::Tensor kerple_bias(KerpleVariant variant, const at::Tensor& p, const at::Tensor& a,
                       int64_t q_len, int64_t k_len);

/// The same for query positions `i` int64 [q] and key positions `j` int64 [k] (distance
/// max(i - j, 0), or |i - j| when `symmetric`), float32 [n_heads, q, k] on p's device.
/// Throws poslens::Error if p and a are not 1-D of the same size >= 1.
at::Tensor kerple_bias(KerpleVariant variant, const at::Tensor& p, const at::Tensor& a,
                       const at::Tensor& i, const at::Tensor& j, bool symmetric = false);

/// KERPLE (chijames/KERPLE) with per-head p, a [n_heads] per layer. Non-causal models get the
/// kernel of |i - j| (it depends on the distance only).
class KerpleEncoding : public RelativeBiasEncoding {
 public:
  KerpleEncoding(KerpleVariant variant, std::vector<at::Tensor> p, std::vector<at::Tensor> a,
                 bool causal, bool shared);
  std::string describe() const override;

 protected:
  at::Tensor bias(int layer, int64_t head_begin, int64_t n_heads, const at::Tensor& i,
                  const at::Tensor& j) const override;

 private:
  KerpleVariant variant_;
  std::vector<at::Tensor> p_, a_;
  bool causal_, shared_;
};

/// The "kerple" component of the PosLens format (docs/poslens-format.md): its parameters,
/// weights (with their initialisation) and checks.
ComponentRecipe kerple_recipe(const PositionComponentSpec& spec, const PositionContext& c);

}  // namespace poslens
