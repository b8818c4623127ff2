#pragma once
// needle-sweep: where in a long context can a model still find a fact? A needle (a text span)
// is inserted at K relative depths of a haystack (real text) so that every input holds T
// tokens — [BOS] haystack[0, d) needle haystack[d, H) query answer — and at each depth PosLens
// measures
//   - the answer's loss: mean over the answer tokens a_k of −ln p(a_k | everything before), in
//     nats (Liu et al. 2023, "Lost in the Middle: How Language Models Use Long Contexts", arXiv
//     2307.03172, §2–3: the U of accuracy against the position of the relevant document; the
//     pass-key form of Mohtashami & Jaggi 2023, arXiv 2305.16300, §4.2);
//   - per layer and head, the attention mass the answer rows put on four segments of the keys:
//     begin (the first `begin_tokens` positions, where attention sinks sit), needle, context
//     (the rest of the haystack) and end (the query and answer themselves) — the segment
//     analysis of Cohere 2025 ("Rope to Nope and Back Again", arXiv 2501.18795, §4) and the
//     attention-bias-by-position of Hsieh et al. 2024 ("Found in the Middle", arXiv
//     2406.16008, §2). The answer rows are the positions whose next-token prediction is an
//     answer token: [answer_begin − 1, T − 1); the masses are averaged over them.
// Choices: the needle goes at token (not sentence) boundaries, at round(depth · H) haystack
// tokens; the haystack's first H tokens are used (an error when it has fewer); the pieces are
// tokenised separately (docs/analyses.md "needle-sweep").
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "analysis/analysis_files.h"
#include "analysis/analysis_result.h"
#include "analysis/progress.h"
#include "core/formats/hdf5_reader.h"
#include "core/runtime/checkpoint.h"

namespace poslens {

/// What to insert where, as token ids.
struct NeedleSpec {
  std::vector<int64_t> haystack;  ///< the text the needle hides in (no BOS)
  std::vector<int64_t> needle;    ///< the inserted span, ≥ 1 token
  std::vector<int64_t> query;     ///< appended after the haystack (may be empty)
  std::vector<int64_t> answer;    ///< the expected continuation whose loss is measured, ≥ 1 token
  std::vector<double> depths;     ///< relative depths in [0, 1], ≥ 1 of them
  int64_t length = 0;             ///< T, tokens per input; 0: every haystack token is used
  int64_t bos = -1;               ///< put first in every input when ≥ 0
  /// The "begin" segment: the first positions (BOS included); it stops where a needle at
  /// depth 0 starts.
  int64_t begin_tokens = 4;
  /// Tokens every input holds besides the haystack: BOS, needle, query and answer.
  int64_t fixed_tokens() const {
    return (bos >= 0 ? 1 : 0) + static_cast<int64_t>(needle.size() + query.size() + answer.size());
  }
};

/// The spec of `model` for a haystack of `ids`: BOS is the config's, first in every input (as
/// length-loss's windows) and taken off the haystack when it starts with it; `needle`, `query`
/// and `answer` encoded by the model's tokenizer, each on its own. Depths and length are left to
/// the caller. Throws poslens::Error for a model without a tokenizer.
NeedleSpec needle_spec(const LoadedModel& model, std::vector<int64_t> ids, const std::string& needle,
                       const std::string& query, const std::string& answer);

/// The segments' names, in the order of NeedleSweep::mass's last axis.
const std::vector<std::string>& needle_segment_names();

/// One input of the sweep: its ids and where its pieces lie.
struct NeedleInput {
  std::vector<int64_t> ids;  ///< T tokens
  int64_t needle_begin = 0;  ///< the needle's first position
  int64_t query_begin = 0;   ///< the query's first position (= the haystack's end)
  int64_t answer_begin = 0;  ///< the answer's first position; the answer ends the input
};

/// The input of `spec` with the needle at relative depth `depth`. Throws poslens::Error for an
/// empty needle or answer, a depth outside [0, 1], a length the pieces do not fit in, or a
/// haystack shorter than the length needs.
NeedleInput needle_input(const NeedleSpec& spec, double depth);

struct NeedleSweep {
  std::vector<double> depths;  ///< [depth], as given
  at::Tensor needle_begin;     ///< int64 [depth]: the needle's first position in each input
  at::Tensor loss;             ///< float64 [depth]: the answer's mean −ln p, nats
  /// float32 [depth, layer, head, segment]: mean over the answer rows of the mass on each
  /// segment (needle_segment_names()).
  at::Tensor mass;
  int64_t length = 0;          ///< T
  int64_t needle_tokens = 0, query_tokens = 0, answer_tokens = 0, begin_tokens = 0;
  std::vector<std::string> layer_types;  ///< ModelConfig::layer_type of each layer
};

/// One forward pass of `model` per depth (a batch of one, logits streamed, the segment masses
/// recomputed from each layer's inputs: segment_mass.h); `progress` counts depths. Memory:
/// one forward's, nothing per T². Throws poslens::Error for what needle_input() throws, an
/// encoder–decoder model, or ids out of the vocabulary; poslens::Cancelled.
NeedleSweep compute_needle_sweep(const LoadedModel& model, const NeedleSpec& spec, const Progress& progress = {});

/// `/analysis/needle_sweep/{depths [depth] float64, needle_begin [depth] int64, loss [depth]
/// float64 (nats), mass [depth, layer, head, segment] float32, segments (names), layer_types
/// (names)}`, attributes `length`, `needle_tokens`, `query_tokens`, `answer_tokens`,
/// `begin_tokens`, `haystack` (where the haystack came from); `/tokens` holds `input` (the
/// first depth's ids); `meta` at the root. Atomic.
void write_needle_sweep_hdf5(const std::string& path, const NeedleSweep& s, const AnalysisInput& input,
                             const std::string& haystack_source, const ExportMetadata& meta);
/// What write_needle_sweep_hdf5 wrote. Throws poslens::Error naming the file for another
/// PosLens version's file or datasets whose shapes disagree.
NeedleSweep read_needle_sweep_hdf5(const Hdf5Reader& file);
/// `depth,needle_begin,loss,layer,layer_type,head,begin,needle,context,end`: one row per depth,
/// layer and head.
std::string needle_sweep_csv(const NeedleSweep& s);

/// The views: the answer's loss against depth (the U of "Lost in the Middle"); the head-mean
/// needle mass as a depth × layer map; the depth- and head-mean mass as a layer × segment map
/// (rows labelled with each layer's type). The summary names the best and worst depth and the
/// layer that looks at the needle most. `name` is the checkpoint's short name.
AnalysisResult needle_sweep_result(const NeedleSweep& s, const AnalysisInput& input, const std::string& name,
                                   const std::string& haystack_source);

/// The registry's `run` (the Analyses panel's): the input is the haystack and the pass-key
/// needle of Mohtashami & Jaggi is hidden at depths 0, 0.1, …, 1 (kPassKey… below, encoded
/// with the model's tokenizer; a model without one throws poslens::Error).
AnalysisResult run_needle_sweep(const LoadedModel& model, const AnalysisInput& input, const Progress& progress);
AnalysisResult read_needle_sweep(const Hdf5Reader& file);

/// The default needle, query and answer (CLI and GUI).
inline constexpr char kPassKeyNeedle[] = " The pass key is 71432. Remember it. 71432 is the pass key.";
inline constexpr char kPassKeyQuery[] = " What is the pass key? The pass key is";
inline constexpr char kPassKeyAnswer[] = " 71432";

/// {0, 1/(k−1), …, 1}: `k` evenly spaced depths (k = 1: {0.5}). Throws poslens::Error for k < 1.
std::vector<double> evenly_spaced_depths(int64_t k);

}  // namespace poslens
