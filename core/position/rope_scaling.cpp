#include "core/position/rope_scaling.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/base/error.h"
#include "core/base/json_fields.h"

namespace poslens {

namespace {

constexpr double kPi = 3.14159265358979323846;

[[noreturn]] void fail(const RopeScaling& s, const std::string& what) {
  throw Error("rope scaling '" + s.type + "': " + what);
}

// theta_c = base^(-2c/d), c = 0..d/2-1, float64.
at::Tensor base_frequencies(double base, int64_t d) {
  const auto c = torch::arange(0, d / 2, torch::kFloat64);
  return torch::pow(base, -2.0 * c / static_cast<double>(d));
}

void require_factor(const RopeScaling& s) {
  if (!(s.factor > 0.0) || !std::isfinite(s.factor))
    fail(s, "factor must be > 0, got " + std::to_string(s.factor));
}

// The training length and factor of yarn/longrope, with HF's override of factor when
// original_max_position_embeddings is given.
void training_length(const RopeScaling& s, int64_t& l0, double& factor) {
  factor = s.factor;
  if (s.original_max_position_embeddings > 0) {
    if (s.max_position_embeddings <= 0)
      fail(s, "max_position_embeddings must be > 0 with original_max_position_embeddings");
    l0 = s.original_max_position_embeddings;
    factor = static_cast<double>(s.max_position_embeddings) / static_cast<double>(l0);
  } else {
    if (s.max_position_embeddings <= 0) fail(s, "max_position_embeddings must be > 0");
    l0 = s.max_position_embeddings;
  }
}

// YaRN's magnitude correction 0.1·m·ln(scale) + 1 (1 when not extending).
double yarn_mscale(double scale, double m) {
  return scale <= 1.0 ? 1.0 : 0.1 * m * std::log(scale) + 1.0;
}

RopeFrequencies yarn(double theta, int64_t d, const RopeScaling& s) {
  require_factor(s);
  int64_t l0 = 0;
  double factor = 0.0;
  training_length(s, l0, factor);
  if (!(factor > 0.0)) fail(s, "factor must be > 0");
  if (!(s.beta_fast > 0.0) || !(s.beta_slow > 0.0)) fail(s, "beta_fast and beta_slow must be > 0");
  RopeFrequencies out;
  if (s.attention_factor) {
    out.attention_factor = *s.attention_factor;
  } else if (s.mscale && s.mscale_all_dim && *s.mscale != 0.0 && *s.mscale_all_dim != 0.0) {
    out.attention_factor = yarn_mscale(factor, *s.mscale) / yarn_mscale(factor, *s.mscale_all_dim);
  } else {
    out.attention_factor = yarn_mscale(factor, 1.0);
  }
  const auto correction_dim = [&](double rotations) {
    return static_cast<double>(d) * std::log(static_cast<double>(l0) / (rotations * 2.0 * kPi)) /
           (2.0 * std::log(theta));
  };
  double low = correction_dim(s.beta_fast);
  double high = correction_dim(s.beta_slow);
  if (s.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(d - 1));
  if (low == high) high += 0.001;
  const auto theta_c = base_frequencies(theta, d);
  const auto ramp =
      ((torch::arange(0, d / 2, torch::kFloat64) - low) / (high - low)).clamp(0.0, 1.0);
  const auto extrapolation = 1.0 - ramp;
  out.inv_freq = theta_c / factor * (1.0 - extrapolation) + theta_c * extrapolation;
  return out;
}

RopeFrequencies llama3(double theta, int64_t d, const RopeScaling& s) {
  require_factor(s);
  if (s.original_max_position_embeddings <= 0)
    fail(s, "original_max_position_embeddings must be > 0");
  if (!(s.low_freq_factor > 0.0) || !(s.high_freq_factor > 0.0) ||
      s.low_freq_factor == s.high_freq_factor)
    fail(s, "low_freq_factor and high_freq_factor must be > 0 and differ");
  const double l0 = static_cast<double>(s.original_max_position_embeddings);
  const double low_freq_wavelen = l0 / s.low_freq_factor;
  const double high_freq_wavelen = l0 / s.high_freq_factor;
  const auto theta_c = base_frequencies(theta, d);
  const auto wavelen = 2.0 * kPi / theta_c;
  // Long wavelengths: interpolated; short: kept; in between: smooth blend.
  auto inv = torch::where(wavelen > low_freq_wavelen, theta_c / s.factor, theta_c);
  const auto smooth =
      (l0 / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
  const auto smoothed = (1.0 - smooth) * inv / s.factor + smooth * inv;
  const auto medium = (wavelen >= high_freq_wavelen).logical_and(wavelen <= low_freq_wavelen);
  return {torch::where(medium, smoothed, inv), 1.0};
}

RopeFrequencies longrope(double theta, int64_t d, const RopeScaling& s, int64_t seq_len) {
  const auto half = static_cast<size_t>(d / 2);
  if (s.short_factor.size() != half || s.long_factor.size() != half)
    fail(s, "short_factor and long_factor must each have rotary_dim/2 = " + std::to_string(half) +
                " entries");
  for (const auto* list : {&s.short_factor, &s.long_factor})
    for (double f : *list)
      if (!(f > 0.0)) fail(s, "short_factor/long_factor entries must be > 0");
  int64_t l0 = 0;
  double factor = 0.0;
  if (s.original_max_position_embeddings <= 0) require_factor(s);
  training_length(s, l0, factor);
  RopeFrequencies out;
  if (s.attention_factor)
    out.attention_factor = *s.attention_factor;
  else
    out.attention_factor =
        factor <= 1.0 ? 1.0 : std::sqrt(1.0 + std::log(factor) / std::log(static_cast<double>(l0)));
  const auto& ext = seq_len > l0 ? s.long_factor : s.short_factor;
  out.inv_freq = base_frequencies(theta, d) / torch::tensor(ext, torch::kFloat64);
  return out;
}

/// The frequencies of the scaling type alone (rope_frequencies_scaled before p-RoPE).
RopeFrequencies scaled_by_type(double rope_theta, int64_t rotary_dim, const RopeScaling& scaling, int64_t seq_len) {
  const auto& s = scaling;
  if (rotary_dim < 2 || rotary_dim % 2 != 0)
    fail(s, "rotary_dim " + std::to_string(rotary_dim) + " must be even and >= 2");
  if (!(rope_theta > 0.0) || rope_theta == 1.0)
    fail(s, "rope_theta must be > 0 and != 1, got " + std::to_string(rope_theta));
  if (s.type == "default") return {base_frequencies(rope_theta, rotary_dim), 1.0};
  if (s.type == "linear") {
    require_factor(s);
    return {base_frequencies(rope_theta, rotary_dim) / s.factor, 1.0};
  }
  if (s.type == "dynamic") {
    require_factor(s);
    if (s.max_position_embeddings <= 0) fail(s, "max_position_embeddings must be > 0");
    if (rotary_dim < 4) fail(s, "rotary_dim must be >= 4 (the exponent is d/(d-2))");
    const double m = static_cast<double>(s.max_position_embeddings);
    const double len = std::max(static_cast<double>(seq_len), m);
    const double d = static_cast<double>(rotary_dim);
    const double base =
        rope_theta * std::pow(s.factor * len / m - (s.factor - 1.0), d / (d - 2.0));
    return {base_frequencies(base, rotary_dim), 1.0};
  }
  if (s.type == "yarn") return yarn(rope_theta, rotary_dim, s);
  if (s.type == "llama3") return llama3(rope_theta, rotary_dim, s);
  if (s.type == "longrope") return longrope(rope_theta, rotary_dim, s, seq_len);
  if (s.type == "proportional") {
    require_factor(s);
    if (!(s.partial_rotary_factor > 0.0 && s.partial_rotary_factor <= 1.0))
      fail(s, "partial_rotary_factor must be in (0, 1], got " + std::to_string(s.partial_rotary_factor));
    // HF: rope_angles = int(partial_rotary_factor * head_dim // 2)
    const auto rotating = static_cast<int64_t>(std::floor(s.partial_rotary_factor * static_cast<double>(rotary_dim) / 2.0));
    auto inv_freq = base_frequencies(rope_theta, rotary_dim) / s.factor;
    inv_freq.narrow(0, rotating, rotary_dim / 2 - rotating).zero_();
    return {inv_freq, 1.0};
  }
  fail(s, "unknown type (expected default, linear, dynamic, yarn, llama3, longrope or proportional)");
}

}  // namespace

int64_t p_rope_dropped_components(double fraction, int64_t rotary_dim) {
  if (!(fraction >= 0.0 && fraction <= 1.0))
    throw Error("p-RoPE: the fraction of components to stop rotating must be in [0, 1], got " +
                std::to_string(fraction));
  return static_cast<int64_t>(std::floor(fraction * static_cast<double>(rotary_dim / 2) + 0.5));
}

RopeFrequencies rope_frequencies_scaled(double rope_theta, int64_t rotary_dim,
                                        const RopeScaling& scaling, int64_t seq_len) {
  auto f = scaled_by_type(rope_theta, rotary_dim, scaling, seq_len);
  const int64_t dropped = p_rope_dropped_components(scaling.drop_lowest_fraction, rotary_dim);
  if (dropped > 0) {  // θ_c falls with c: the lowest frequencies are the last components
    f.inv_freq = f.inv_freq.clone();
    f.inv_freq.narrow(0, f.inv_freq.size(0) - dropped, dropped).zero_();
  }
  return f;
}

const char* to_string(RopePairing v) {
  return v == RopePairing::Interleaved ? "interleaved" : "half_split";
}

RopeScaling rope_scaling_from_hf(const nlohmann::json& j, double rope_theta, int64_t rotary_dim,
                                 int64_t n_ctx, const std::string& where) {
  using fields::bool_or;
  using fields::int_or;
  using fields::number_or;
  RopeScaling s;
  const auto it = j.find("rope_scaling");
  if (it == j.end() || it->is_null()) return s;
  if (!it->is_object()) throw Error(where + ": \"rope_scaling\" must be an object");
  const auto& r = *it;
  for (const char* key : {"rope_type", "type"})
    if (r.contains(key) && !r[key].is_string())
      throw Error(where + ": \"rope_scaling\"." + key + " must be a string, got " + r[key].dump());
  s.type = r.value("rope_type", r.value("type", std::string("default")));
  s.factor = number_or(r, "factor", 1.0, where);
  s.max_position_embeddings = n_ctx;
  s.original_max_position_embeddings = int_or(r, "original_max_position_embeddings", 0, where);
  s.beta_fast = number_or(r, "beta_fast", s.beta_fast, where);
  s.beta_slow = number_or(r, "beta_slow", s.beta_slow, where);
  s.low_freq_factor = number_or(r, "low_freq_factor", s.low_freq_factor, where);
  s.high_freq_factor = number_or(r, "high_freq_factor", s.high_freq_factor, where);
  s.truncate = bool_or(r, "truncate", s.truncate, where);
  if (s.type == "proportional") s.partial_rotary_factor = number_or(r, "partial_rotary_factor", 1.0, where);
  for (const auto& [key, field] : {std::pair{"attention_factor", &s.attention_factor},
                                   std::pair{"mscale", &s.mscale},
                                   std::pair{"mscale_all_dim", &s.mscale_all_dim}})
    if (r.contains(key) && !r[key].is_null()) *field = number_or(r, key, 0.0, where);
  for (const auto& [key, field] : {std::pair{"short_factor", &s.short_factor},
                                   std::pair{"long_factor", &s.long_factor}})
    if (r.contains(key) && r[key].is_array())
      for (const auto& v : r[key]) {
        if (!v.is_number()) throw Error(where + ": rope_scaling." + key + " must hold numbers");
        field->push_back(v.get<double>());
      }
  try {
    rope_frequencies_scaled(rope_theta, rotary_dim, s);
  } catch (const Error& e) {
    throw Error(where + ": rope_scaling: " + e.what());
  }
  return s;
}

}  // namespace poslens
