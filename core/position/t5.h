#pragma once
// T5 relative-position bucket bias (Raffel et al. 2020; docs/formulas.md §2 "T5 bucket bias";
// reference: HF transformers `T5Attention._relative_position_bucket` / `compute_bias`).
#include <cstdint>

#include <ATen/core/Tensor.h>

#include "core/position/components.h"
#include "core/position/relative_bias.h"

namespace poslens {

/// Maps relative positions (memory_position - query_position, integer tensor of any shape) to
/// bucket ids, int64 of the same shape, exactly as HF:
///   bidirectional: num_buckets is halved to nb; keys after the query (relative_position > 0)
///     use buckets nb..2nb-1, the others 0..nb-1; n = |relative_position|.
///   causal: n = max(-relative_position, 0) (keys after the query all fall in bucket 0).
///   With max_exact = nb/2 (integer division): n < max_exact -> bucket n; otherwise
///     max_exact + trunc(log(n/max_exact) / log(max_distance/max_exact) · (nb - max_exact)),
///     computed in float32 as the reference does, capped at nb - 1.
/// Throws poslens::Error if num_buckets < 2 (< 4 when bidirectional), max_distance <= max_exact,
/// or relative_position is not an integer tensor.
at::Tensor t5_relative_position_bucket(const at::Tensor& relative_position, bool bidirectional,
                                       int64_t num_buckets, int64_t max_distance);

/// The position bias, float32 [head, q_pos, k_pos]: bias[h, r, j] = table[bucket(j - i), h]
/// with table float [num_buckets, n_heads] (HF `relative_attention_bias.weight`) and
/// i = k_len - q_len + r (queries are the last q_len positions, as in HF decoding with a cache).
/// Added to the logits as is: T5 has no 1/sqrt(d) scaling. Future keys are not masked here.
/// Throws poslens::Error if table is not [num_buckets, n_heads], q_len < 1, k_len < 1,
/// q_len > k_len, or the bucket arguments are invalid (see above).
at::Tensor t5_bias(const at::Tensor& table, int64_t q_len, int64_t k_len, bool bidirectional,
                   int64_t num_buckets, int64_t max_distance);

/// The same for query positions `i` int64 [q] and key positions `j` int64 [k]: float32
/// [n_heads, q, k] with table[bucket(j - i), h], on i's device. Throws as t5_bias.
at::Tensor t5_bias(const at::Tensor& table, const at::Tensor& i, const at::Tensor& j,
                   bool bidirectional, int64_t num_buckets, int64_t max_distance);

/// T5 bucket bias (HF T5Attention.compute_bias): table[bucket(j - i), h], one table per layer
/// or one for all (`tables` has n_layers entries, possibly the same tensor).
class T5BiasEncoding : public RelativeBiasEncoding {
 public:
  /// tables: float [num_buckets, n_heads] per layer. Throws poslens::Error on invalid bucket
  /// arguments (t5_relative_position_bucket above).
  T5BiasEncoding(std::vector<at::Tensor> tables, bool bidirectional, int64_t num_buckets,
                 int64_t max_distance, bool shared);
  std::string describe() const override;

 protected:
  at::Tensor bias(int layer, int64_t head_begin, int64_t n_heads, const at::Tensor& i,
                  const at::Tensor& j) const override;

 private:
  std::vector<at::Tensor> tables_;
  bool bidirectional_;
  int64_t num_buckets_, max_distance_;
  bool shared_;
};

/// The "t5" component of the PosLens format (docs/poslens-format.md): its parameters,
/// weights (with their initialisation) and checks.
ComponentRecipe t5_recipe(const PositionComponentSpec& spec, const PositionContext& c);

}  // namespace poslens
