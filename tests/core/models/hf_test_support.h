#pragma once
// Shared by the HF architecture tests (test_hf_neox_phi.cpp, test_hf_gemma_olmo.cpp): writing
// small random checkpoints in HF layouts, and float64 reference pieces written from the HF
// modeling files' semantics, sharing no code with the runtime.
#include <torch/torch.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "core/formats/safetensors.h"
#include "core/runtime/checkpoint.h"
#include "fixtures.h"

namespace poslens::hf_test {

using ::testing::HasSubstr;
using Json = nlohmann::json;
using Tensors = std::vector<std::pair<std::string, at::Tensor>>;

inline void write_folder(const std::filesystem::path& dir, const Json& config, const Tensors& t) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << config.dump(2);
  write_safetensors((dir / "model.safetensors").string(), t);
}

/// `config` with `key` set to `value` (null values are written as null, as HF does).
inline Json with(Json config, const std::string& key, Json value) {
  config[key] = std::move(value);
  return config;
}

inline Tensors without(Tensors t, const std::string& name) {
  t.erase(std::remove_if(t.begin(), t.end(), [&](const auto& p) { return p.first == name; }),
          t.end());
  return t;
}

/// The error message of loading `dir`, or "" if it loads.
inline std::string load_error(const std::filesystem::path& dir) {
  try {
    load_checkpoint(dir.string(), {"cpu", "float32", ""});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// ---------------------------------------------------------------- reference pieces (float64)
/// Stored tensors by name, as float64.
struct Weights {
  const Tensors& t;
  at::Tensor operator()(const std::string& name) const {
    for (const auto& [n, v] : t)
      if (n == name) return v.to(torch::kDouble);
    throw std::runtime_error("test: no tensor " + name);
  }
};

inline at::Tensor affine(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b = {}) {
  auto y = torch::matmul(x, w.t());
  return b.defined() ? y + b : y;
}

inline at::Tensor layer_norm(const at::Tensor& x, const at::Tensor& g, const at::Tensor& b, double eps) {
  const auto mu = x.mean(-1, true), var = (x - mu).pow(2).mean(-1, true);
  return (x - mu) / torch::sqrt(var + eps) * g + b;
}

inline at::Tensor gelu_tanh(const at::Tensor& x) {
  return 0.5 * x * (1 + torch::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x.pow(3))));
}

inline at::Tensor gelu_erf(const at::Tensor& x) { return 0.5 * x * (1 + torch::erf(x / std::sqrt(2.0))); }

/// HF apply_rotary_pos_emb with rotate_half on the first `rot` dims of x [T, heads, d_head]:
/// x_rot * cos + rotate_half(x_rot) * sin, inv_freq_c = theta^(-2c/rot); the rest passes.
inline at::Tensor rope_rotate_half(const at::Tensor& x, int64_t rot, double theta) {
  const int64_t T = x.size(0), half = rot / 2;
  auto cos = torch::zeros({T, 1, rot}, torch::kDouble);
  auto sin = torch::zeros({T, 1, rot}, torch::kDouble);
  for (int64_t m = 0; m < T; ++m)
    for (int64_t c = 0; c < half; ++c) {
      const double a = double(m) * std::pow(theta, -2.0 * double(c) / double(rot));
      for (int64_t i : {c, c + half}) {  // emb = cat(freqs, freqs)
        cos[m][0][i] = std::cos(a);
        sin[m][0][i] = std::sin(a);
      }
    }
  const auto x_rot = x.narrow(2, 0, rot), x_pass = x.narrow(2, rot, x.size(2) - rot);
  const auto rotated_half = torch::cat({-x_rot.narrow(2, half, half), x_rot.narrow(2, 0, half)}, 2);
  return torch::cat({x_rot * cos + rotated_half * sin, x_pass}, 2);
}

/// Causal softmax attention, q [T, H, dh], k/v [T, Hkv, dh] (query head h reads kv head
/// h / (H/Hkv), HF repeat_kv), scores * 1/sqrt(dh). Returns [T, H*dh].
inline at::Tensor causal_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  const int64_t T = q.size(0), H = q.size(1), Hkv = k.size(1), dh = q.size(2);
  std::vector<at::Tensor> heads;
  for (int64_t h = 0; h < H; ++h) {
    const int64_t kvh = h / (H / Hkv);
    auto s = torch::matmul(q.select(1, h), k.select(1, kvh).t()) / std::sqrt(double(dh));
    s = s.masked_fill(torch::ones({T, T}, torch::kBool).tril().logical_not(), -1e300);
    heads.push_back(torch::matmul(torch::softmax(s, -1), v.select(1, kvh)));
  }
  return torch::cat(heads, 1);
}

inline double max_error(const at::Tensor& logits, const at::Tensor& reference) {
  return (logits.to(torch::kDouble) - reference).abs().max().item<double>();
}

inline auto random_tensor(double scale = 0.3) {
  return [scale](std::vector<int64_t> shape) { return torch::randn(shape) * scale; };
}

const std::vector<int64_t> kIds{1, 5, 9, 39, 0, 12, 12, 7, 30};


}  // namespace poslens::hf_test
