#pragma once
// RoPE frequency scaling (docs/formulas.md §2 "RoPE ... Scaling variants"): the inverse frequencies and
// attention factor of HF transformers `modeling_rope_utils` (`_compute_*_parameters`) for the
// rope types default, linear (position interpolation), dynamic (NTK), yarn, llama3, longrope.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

namespace poslens {

/// RoPE pairing convention (docs/formulas.md §2): which dimensions form a rotated 2-D pair.
///  Interleaved: (2c, 2c+1) — GPT-J, Meta, llama2.c.   HalfSplit: (c, c + rotary_dim/2) — HF rotate_half.
enum class RopePairing { Interleaved, HalfSplit };
const char* to_string(RopePairing);

/// The `rope_scaling` (HF: `rope_parameters`) of a config. Only the fields a type uses are read.
struct RopeScaling {
  /// "default", "linear", "dynamic", "yarn", "llama3", "longrope" or "proportional".
  std::string type = "default";
  /// linear, dynamic, yarn, llama3: the context extension factor (> 0). longrope: used for the
  /// attention factor only, and only when original_max_position_embeddings is 0.
  double factor = 1.0;
  /// The config's max_position_embeddings. dynamic: the length beyond which the base grows.
  /// yarn / longrope: the training length when original_max_position_embeddings is 0.
  int64_t max_position_embeddings = 0;
  /// 0 = absent. llama3: required (the old context length). yarn / longrope: when set, the
  /// training length, and (as HF) factor is replaced by max_position_embeddings / this.
  int64_t original_max_position_embeddings = 0;
  /// yarn / longrope: an explicit attention factor; when absent it is inferred (see below).
  std::optional<double> attention_factor;
  /// yarn: the ramp boundaries in rotations over the training length (HF defaults 32 and 1).
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  /// yarn: DeepSeek-style mscale pair; used only when both are set and non-zero.
  std::optional<double> mscale;
  std::optional<double> mscale_all_dim;
  /// yarn: floor/ceil the correction range (HF default true).
  bool truncate = true;
  /// llama3: the wavelength thresholds are original_max / low_freq_factor and / high_freq_factor.
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  /// longrope: per-frequency rescale factors, each of size rotary_dim/2.
  std::vector<double> short_factor;
  std::vector<double> long_factor;
  /// proportional: the fraction of the rotary_dim/2 components that rotate (HF
  /// `partial_rotary_factor` inside Gemma 4's rope_parameters), in (0, 1].
  double partial_rotary_factor = 1.0;
  /// p-RoPE (Barbero et al. 2024, "Round and Round We Go! What makes Rotary Positional
  /// Encodings useful?", arXiv 2410.06205, §6): the lowest-frequency fraction of the rotary
  /// components, ⌊fraction · rotary_dim/2 + 0.5⌋ of them, rotate by θ_c = 0 — they carry content
  /// only, like NoPE's. Applied after the scaling above; 0: none, 1: every component (a NoPE
  /// layer). Not an HF key: PosLens's run-time intervention (the component's "p_rope_drop").
  double drop_lowest_fraction = 0.0;
};

struct RopeFrequencies {
  at::Tensor inv_freq;            ///< float64 [rotary_dim/2], radians per position
  double attention_factor = 1.0;  ///< multiplies both cos and sin (yarn, longrope); else 1
};

/// inv_freq and attention factor for `rotary_dim` rotary dims (the HF `dim`, i.e.
/// head_dim·partial_rotary_factor) and base `rope_theta`; theta_c = rope_theta^(-2c/rotary_dim).
/// `seq_len` is the current sequence length (dynamic, longrope), 0 = not given (HF None).
///   default:  inv_freq = theta_c; attention factor 1.
///   linear:   theta_c / factor.
///   dynamic:  base' = rope_theta·(factor·s/M - (factor - 1))^(d/(d-2)), s = max(seq_len, M),
///             M = max_position_embeddings; inv_freq = base'^(-2c/d) (unchanged for s <= M).
///   yarn:     with L0 the training length, dim(r) = d·ln(L0/(2·pi·r)) / (2·ln rope_theta),
///             low = max(floor(dim(beta_fast)), 0), high = min(ceil(dim(beta_slow)), d-1)
///             (no floor/ceil when !truncate; high += 0.001 if equal),
///             ramp_c = clamp((c - low)/(high - low), 0, 1), e_c = 1 - ramp_c,
///             inv_freq = theta_c/factor·(1 - e_c) + theta_c·e_c;
///             attention factor: given, else mscale(factor, mscale)/mscale(factor, mscale_all_dim)
///             when both are set, else mscale(factor) with mscale(s, m) = 0.1·m·ln s + 1 (1 if
///             s <= 1).
///   llama3:   wavelength w_c = 2·pi/theta_c; w_c < L0/high_freq_factor: theta_c;
///             w_c > L0/low_freq_factor: theta_c/factor; otherwise with
///             s = (L0/w_c - low_freq_factor)/(high_freq_factor - low_freq_factor):
///             (1 - s)·theta_c/factor + s·theta_c.  L0 = original_max_position_embeddings.
///   longrope: inv_freq = theta_c / ext_c, ext = long_factor if seq_len > L0 else short_factor;
///             attention factor: given, else sqrt(1 + ln(factor)/ln(L0)) (1 if factor <= 1).
///   proportional (Gemma 4's global layers, HF _compute_proportional_rope_parameters):
///             the first n = floor(partial_rotary_factor · rotary_dim/2) components theta_c/factor,
///             the other rotary_dim/2 − n rotate by 0 (p-RoPE as a checkpoint's own setting:
///             Barbero et al. 2024, arXiv 2410.06205, §6, with p = 1 − partial_rotary_factor).
///             Unlike a partial rotary_dim, every pair (c, c + rotary_dim/2) stays in place and
///             theta_c keeps the exponent −2c/rotary_dim of the whole head.
/// Then p-RoPE: the last p_rope_dropped_components(drop_lowest_fraction, rotary_dim) entries
/// of inv_freq (the lowest frequencies) are 0.
/// Computed in float64 (HF uses float32: differences are at the 1e-7 relative level).
/// Throws poslens::Error for an unknown type, rotary_dim odd or < 2 (< 4 for dynamic), or a
/// missing/invalid parameter of the chosen type (factor <= 0, lengths <= 0, low_freq_factor ==
/// high_freq_factor, factor lists of the wrong size or with entries <= 0, a p-RoPE fraction
/// outside [0, 1], a partial_rotary_factor outside (0, 1]).
RopeFrequencies rope_frequencies_scaled(double rope_theta, int64_t rotary_dim,
                                        const RopeScaling& scaling, int64_t seq_len = 0);

/// How many of the rotary_dim/2 components p-RoPE stops rotating: ⌊fraction · rotary_dim/2 +
/// 0.5⌋. Throws poslens::Error for a fraction outside [0, 1].
int64_t p_rope_dropped_components(double fraction, int64_t rotary_dim);

/// Reads HF `rope_scaling` ({"rope_type" | "type", "factor", ...}, modeling_rope_utils) of the
/// config object `j` (absent or null: type "default") for a model with `rope_theta`,
/// `rotary_dim` and training length `n_ctx`; checked by computing the frequencies once, so bad
/// parameters fail at load. Throws poslens::Error "<where>: rope_scaling: ...".
RopeScaling rope_scaling_from_hf(const nlohmann::json& j, double rope_theta, int64_t rotary_dim,
                                 int64_t n_ctx, const std::string& where);

}  // namespace poslens
