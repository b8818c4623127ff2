#pragma once
// The U-shape probe (Chen et al. 2024 §4.1; docs/formulas.md §3 "Attention by distance / U-shape"): the model
// runs on content-fixed inputs — [BOS] + one token repeated T−1 times — and the last query's
// pre-softmax logit to every key, averaged over tokens, shows what a head does by position
// alone. For rotary models each logit is split per rotary component (rope_frequencies.h), which
// gives the per-frequency curves and their VAF (Chen et al. 2024 Fig. 2). Comparing checkpoints runs the
// same probe on each (Fig. 2a: VAF against training step).
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "core/runtime/checkpoint.h"

namespace poslens {

struct ProbeOptions {
  int64_t length = 0;        ///< T, tokens per sample with BOS (>= 2)
  int64_t samples = 0;       ///< N tokens drawn at random; 0 = every non-special token once
  uint64_t seed = 0;         ///< seed of the draw
  int64_t batch = 0;         ///< samples per forward pass; 0 = chosen from the model size
  int64_t bos_id = -1;       ///< -1: the tokenizer's BOS, else the config's bos_token_id
  int64_t train_length = 0;  ///< L for the activated band; 0 = from the checkpoint
  /// The tokens to repeat, one sample each; empty = probe_tokens(model, samples, seed).
  std::vector<int64_t> tokens;
  /// false: the components are kept only summed over c (ProbeResult::components
  /// [layer, head, 1, key_pos]) and no VAF is computed — all a position-only map reads, with C
  /// times less memory (GPT-2-small shape at T = 8192: 300 MB of float64 sums -> 9 MB).
  bool per_component = true;
};

struct ProbeResult {
  int64_t T = 0;
  int64_t n_samples = 0;
  int64_t L = 0;               ///< training length used for `activated`
  int64_t bos_id = -1;
  std::string pairing;         ///< "interleaved" / "half_split"; empty when nothing rotates
  int64_t kept_components = 0; ///< HoPE's cut (= component count for RoPE)
  std::vector<int64_t> tokens; ///< the repeated token of each sample
  /// Mean over samples of the last query's logit to each key, as in hook_attn_scores (scale
  /// and position terms included), float32 [layer, head, key_pos]; scores_std the standard
  /// deviation over samples (population), same shape.
  at::Tensor scores, scores_std;
  /// The same split per rotary component, float32 [layer, head, component, key_pos] (0
  /// components when nothing rotates: then scores are hook_attn_scores' last row itself, NaN
  /// at keys a sliding window hides). components.sum(2) + remainder + position_terms = scores
  /// for rotary models. One summed component when ProbeOptions::per_component is false. Each
  /// layer is split by its own rotation (ModelConfig::layer_schemes: Gemma 3's local layers by
  /// their local base); a NoPE layer's components are zero and its scores its logits as they are.
  at::Tensor components;
  at::Tensor remainder;       ///< [layer, head, key_pos]: unrotated dims; undefined when none
  at::Tensor position_terms;  ///< [layer, head, key_pos]: hook_pos_scores' row; undefined when none
  /// float64 [component]: effective θ_c (0 past HoPE's cut); of the model-wide encoding (the
  /// global layers') when the layers differ.
  at::Tensor theta;
  at::Tensor activated;       ///< bool [component]: π/L < θ_c < 2π/L
  /// Models whose layers differ (ModelConfig::layer_schemes): each layer's own θ_c, float64
  /// [layer, component] (zeros for a NoPE layer), and its activated band, bool [layer,
  /// component]. Undefined when every layer rotates by `theta`. Read through layer_theta().
  at::Tensor theta_per_layer, activated_per_layer;
  /// VAF (%) of each component curve for the head-mean curve, float32 [layer, component], and
  /// per head, [layer, head, component]; NaN where the curve is flat. Undefined without
  /// ProbeOptions::per_component.
  at::Tensor vaf, vaf_per_head;
};

/// Layer `layer`'s θ_c and activated band: theta_per_layer's row where the layers differ,
/// else theta / activated. Throws std::out_of_range for a layer outside the result.
std::pair<at::Tensor, at::Tensor> layer_theta(const ProbeResult& p, int64_t layer);

/// The training length L of a model: the "length" of its PosLens training record, else n_ctx
/// (llama2.c seq_len, HF max_position_embeddings). 0 when unknown.
int64_t training_length(const ModelConfig& config);

/// The probe's tokens: every id of the vocabulary except the tokenizer's special ones (BOS,
/// EOS, unknown, padding; without a tokenizer the config's BOS) when `samples` is 0, else
/// `samples` ids drawn without replacement (with replacement once they run out), seeded.
std::vector<int64_t> probe_tokens(const LoadedModel& model, int64_t samples, uint64_t seed);

/// Runs the probe on `model` (its device and dtype) in batches, reporting (samples done,
/// samples) through `progress`, which cancels by returning false (poslens::Cancelled).
/// Under c10::InferenceMode. Throws poslens::Error for T < 2, a model without a BOS id
/// (set options.bos_id), or an empty token set.
ProbeResult run_probe(const LoadedModel& model, const ProbeOptions& options,
                      const std::function<bool(int64_t, int64_t)>& progress = {});

/// VAF of `components` [layer, head, component, key_pos] for `scores` [layer, head, key_pos]:
/// fills result.vaf (head-mean curves) and result.vaf_per_head.
void compute_probe_vaf(ProbeResult& result);

}  // namespace poslens
