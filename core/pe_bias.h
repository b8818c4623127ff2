#pragma once
// Additive relative biases as model components (SPEC.md §2): ALiBi, T5 buckets, KERPLE, FIRE.
// Each adds a [head, q_pos, k_pos] term to the logits as is (no 1/sqrt(d)); that term is also
// hook_pos_scores. The formulas live in alibi.h, t5_bias.h, kerple.h and fire.h.
#include <vector>

#include "core/fire.h"
#include "core/kerple.h"
#include "core/position_encoding.h"

namespace poslens {

/// The shared part: add bias(layer, T) to ScoreTerms::position.
class RelativeBiasEncoding : public PositionEncoding {
 public:
  void add_score_terms(const AttentionInputs& in, ScoreTerms& out) const override;
  bool has_position_scores() const override { return true; }

 protected:
  /// float32 [head, T, T] for query i and key j at positions i, j of a T-token sequence.
  virtual at::Tensor bias(int layer, int64_t T) const = 0;
};

/// ALiBi (Press et al. 2022): -m_h (i - j) with alibi_slopes(n_heads). Non-causal models get the
/// symmetric -m_h |i - j| (the usual bidirectional form); no weights.
class AlibiEncoding : public RelativeBiasEncoding {
 public:
  /// Throws poslens::Error if n_heads < 1.
  AlibiEncoding(int64_t n_heads, bool causal);
  std::string describe() const override;

 protected:
  at::Tensor bias(int layer, int64_t T) const override;

 private:
  std::vector<double> slopes_;
  bool causal_;
};

/// T5 bucket bias (HF T5Attention.compute_bias): table[bucket(j - i), h], one table per layer
/// or one for all (`tables` has n_layers entries, possibly the same tensor).
class T5BiasEncoding : public RelativeBiasEncoding {
 public:
  /// tables: float [num_buckets, n_heads] per layer. Throws poslens::Error on invalid bucket
  /// arguments (t5_bias.h).
  T5BiasEncoding(std::vector<at::Tensor> tables, bool bidirectional, int64_t num_buckets,
                 int64_t max_distance, bool shared);
  std::string describe() const override;

 protected:
  at::Tensor bias(int layer, int64_t T) const override;

 private:
  std::vector<at::Tensor> tables_;
  bool bidirectional_;
  int64_t num_buckets_, max_distance_;
  bool shared_;
};

/// KERPLE (chijames/KERPLE) with per-head p, a [n_heads] per layer. Non-causal models get the
/// kernel of |i - j| (it depends on the distance only).
class KerpleEncoding : public RelativeBiasEncoding {
 public:
  KerpleEncoding(KerpleVariant variant, std::vector<at::Tensor> p, std::vector<at::Tensor> a,
                 bool causal, bool shared);
  std::string describe() const override;

 protected:
  at::Tensor bias(int layer, int64_t T) const override;

 private:
  KerpleVariant variant_;
  std::vector<at::Tensor> p_, a_;
  bool causal_, shared_;
};

/// FIRE (Li et al. 2024) with one FireParams per layer. Causal models only (the normaliser
/// psi(max(L_thr, i)) is defined for keys up to the query).
class FireEncoding : public RelativeBiasEncoding {
 public:
  explicit FireEncoding(std::vector<FireParams> params, bool shared);
  std::string describe() const override;

 protected:
  at::Tensor bias(int layer, int64_t T) const override;

 private:
  std::vector<FireParams> params_;
  bool shared_;
};

}  // namespace poslens
