#pragma once
// Interventions at run time, without editing the checkpoint: a model that shares the loaded
// one's weights but runs with some position mechanism moved or removed, so that every analysis
// (each CLI command's `--intervene`, docs/analyses.md "Interventions") can be read before and
// after. Each changes the config or a copy of one weight, never the checkpoint's tensors:
//   - p-RoPE (Barbero et al. 2024, "Round and Round We Go! What makes Rotary Positional
//     Encodings useful?", arXiv 2410.06205, §6): the lowest-frequency fraction p of every RoPE
//     component's frequencies set to θ_c = 0 (RopeScaling::drop_lowest_fraction): those channels
//     carry content only. p = 0 changes nothing; p = 1 is a NoPE forward. The paper names the
//     variant by the fraction it keeps rotating (its "p" is our 1 − p).
//   - Head temperature (Wang et al. 2024, "Length Generalization of Causal Transformers without
//     Position Encoding", arXiv 2404.12224, §4): head h of layer l runs with logits s/τ, by
//     scaling its rows of W_q (and b_q) by 1/τ — exact where the logits are scale·q·kᵀ (RoPE
//     rotates q linearly); refused where a soft cap, an additive position term or a q norm
//     shared by the heads would make it something else.
//   - Sink removal (gpt-oss, learned attention sinks: ModelConfig::attention_sinks): the sink
//     logits dropped, so every row's softmax is over the keys alone.
//   - The first token masked as a key (Barbero et al. 2025, "Why do LLMs attend to the first
//     token?", arXiv 2504.02732, §5 remove the sink the first token is): key 0 hidden from every
//     query but query 0 in every layer (ModelConfig::mask_first_key): no later position reads
//     it, so with a relative encoding positions 1…T−1 compute what the input without it does;
//     with an absolute one they keep their indices. Running *without* the first token is the
//     input without it (`--tokens`).
//   - Massive-activation ablation (Sun et al. 2024, "Massive Activations in Large Language
//     Models", arXiv 2402.17762, §3): at the first layer whose output has massive entries
//     (|h| > 100 and > 1000 × its median |h|) they are set to 0 inside the forward pass
//     (ModelConfig::ablate_massive_activations). Their other ablation sets them to their mean
//     values instead ("massive=mean:FILE", ModelConfig::massive_means): FILE is what
//     `poslens-cli massive-activations` wrote for a calibration text, whose `means` hold, per
//     residual dimension, the mean of its massive entries at the first layer that has any
//     (MassiveActivations::means; over every massive token of that text — the first token and
//     the delimiters — where the paper averages over many sequences).
// Every intervened model's config names what ran (ModelConfig::interventions), so every file
// written from it records it (root attribute "interventions", and in "model_config").
#include <memory>
#include <string>
#include <vector>

#include "core/runtime/transformer.h"

namespace poslens {

/// Head `head` of layer `layer` (−1: every head of the layer) at temperature τ > 0.
struct HeadTemperature {
  int64_t layer = 0, head = -1;
  double tau = 1.0;
};

struct Interventions {
  double p_rope = 0.0;  ///< fraction of each RoPE component's lowest frequencies left unrotated
  std::vector<HeadTemperature> temperatures;
  bool remove_sinks = false;
  bool mask_first_key = false;
  bool zero_massive = false;  ///< massive activations set to 0 where they first appear
  /// Non-empty: massive activations set to the means this massive-activations file holds.
  std::string massive_means_file;
  bool empty() const {
    return p_rope == 0.0 && temperatures.empty() && !remove_sinks && !mask_first_key && !zero_massive &&
           massive_means_file.empty();
  }
  /// "p-RoPE 0.25, L3H1 τ 2, no learned sinks, first token masked as a key" ("none" when empty).
  std::string describe() const;
};

/// Parses the CLI's `--intervene` values, one intervention each: "p-rope=P" (P in [0, 1]),
/// "temperature=LxHy:τ" or "temperature=Lx:τ" (every head of layer x), "no-sinks",
/// "mask-first-key", "massive=zero", "massive=mean:FILE". Throws poslens::Error naming the value
/// that does not parse (both massive ablations at once, too).
Interventions parse_interventions(const std::vector<std::string>& items);

/// `model` with `iv` applied, sharing every weight it does not change. Throws poslens::Error
/// (naming what and why) for p-RoPE on a model without RoPE, a temperature on a layer or head
/// that does not exist or on a layer where it would not scale the logits (soft cap, additive
/// position term, per-head q norm shared by the heads), sink removal on a model without
/// learned sinks, mask-first-key or a massive ablation on an encoder–decoder model, or a means
/// file that does not open, has no means or means of another width (naming it). The result's
/// config().interventions adds iv.describe() to `model`'s own.
std::unique_ptr<Transformer> intervened_model(const Transformer& model, const Interventions& iv);

}  // namespace poslens
