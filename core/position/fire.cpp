#include "core/position/fire.h"

#include <torch/torch.h>

#include <cmath>
#include <string>

#include "core/base/error.h"
#include "core/position/component_params.h"

namespace poslens {

namespace {

void check_lengths(const char* who, int64_t q_len, int64_t k_len) {
  if (q_len < 1 || k_len < 1 || q_len > k_len)
    throw Error(std::string(who) + ": need 1 <= q_len <= k_len, got q_len=" +
                std::to_string(q_len) + ", k_len=" + std::to_string(k_len));
}

}  // namespace

at::Tensor fire_normalized_distance(double c, double l_thr, int64_t q_len, int64_t k_len) {
  return fire_normalized_distance(torch::tensor(c, torch::kFloat64),
                                  torch::tensor(l_thr, torch::kFloat64), q_len, k_len);
}

at::Tensor fire_normalized_distance(const at::Tensor& c, const at::Tensor& l_thr, int64_t q_len,
                                    int64_t k_len) {
  check_lengths("fire_normalized_distance", q_len, k_len);
  const auto [i, j] = last_queries_positions(q_len, k_len);
  const auto device = c.defined() ? c.device() : c10::Device(c10::kCPU);
  return fire_normalized_distance(c, l_thr, i.to(device), j.to(device));
}

at::Tensor fire_normalized_distance(const at::Tensor& c, const at::Tensor& l_thr,
                                    const at::Tensor& i_pos, const at::Tensor& j_pos) {
  if (!c.defined() || !l_thr.defined() || c.numel() != 1 || l_thr.numel() != 1)
    throw Error("fire_normalized_distance: c and L_thr must be one-element tensors");
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64).device(c.device());
  const auto abs_c = c.to(f64).abs().reshape({});
  const auto threshold = l_thr.to(f64).abs().reshape({});
  const auto i = i_pos.to(f64).unsqueeze(1);  // [q, 1]
  const auto j = j_pos.to(f64).unsqueeze(0);  // [1, k]
  const auto distance = (i - j).clamp_min(0.0);  // 0 where j > i
  const auto psi_distance = torch::log1p(abs_c * distance);
  const auto normalizer = torch::log1p(abs_c * torch::maximum(i, threshold)) + kFireEps;
  return psi_distance / normalizer;
}

at::Tensor fire_bias(const FireParams& params, int64_t q_len, int64_t k_len) {
  check_lengths("fire_bias", q_len, k_len);
  const auto [i, j] = last_queries_positions(q_len, k_len);
  const auto device = params.w1.defined() ? params.w1.device() : c10::Device(c10::kCPU);
  return fire_bias(params, i.to(device), j.to(device));
}

at::Tensor fire_bias(const FireParams& params, const at::Tensor& i, const at::Tensor& j,
                     int64_t head_begin, int64_t n_heads) {
  const auto& w1 = params.w1;
  const auto& b1 = params.b1;
  const auto& w2 = params.w2;
  const auto& b2 = params.b2;
  if (!w1.defined() || !b1.defined() || !w2.defined() || !b2.defined())
    throw Error("fire_bias: missing MLP weights");
  if (w1.dim() != 2 || w1.size(1) != 1 || w1.size(0) < 1)
    throw Error("fire_bias: w1 must be [hidden, 1]");
  const int64_t hidden = w1.size(0);
  if (b1.dim() != 1 || b1.size(0) != hidden)
    throw Error("fire_bias: b1 must be [hidden=" + std::to_string(hidden) + "]");
  if (w2.dim() != 2 || w2.size(1) != hidden || w2.size(0) < 1)
    throw Error("fire_bias: w2 must be [n_heads, hidden=" + std::to_string(hidden) + "]");
  if (b2.dim() != 1 || b2.size(0) != w2.size(0))
    throw Error("fire_bias: b2 must be [n_heads=" + std::to_string(w2.size(0)) + "]");
  const int64_t heads = n_heads < 0 ? w2.size(0) : n_heads;

  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(w1.device());
  const auto ip = i.to(w1.device()), jp = j.to(w1.device());
  const auto x = fire_normalized_distance(params.c, params.l_thr, ip, jp)
                     .to(f32)
                     .unsqueeze(-1);                                        // [q, k, 1]
  const auto h = torch::relu(torch::linear(x, w1.to(f32), b1.to(f32)));    // [q, k, hidden]
  const auto out = torch::linear(h, w2.narrow(0, head_begin, heads).to(f32),
                                 b2.narrow(0, head_begin, heads).to(f32));  // [q, k, H]
  // Future keys: 0 (see the header).
  const auto future = (ip.unsqueeze(1) < jp.unsqueeze(0)).unsqueeze(-1);
  return out.masked_fill(future, 0.0).permute({2, 0, 1}).contiguous();
}

FireEncoding::FireEncoding(std::vector<FireParams> params, bool shared)
    : params_(std::move(params)), shared_(shared) {}

std::string FireEncoding::describe() const {
  return "FIRE (MLP width " + std::to_string(params_.front().w1.size(0)) + ", " + describe_sharing(shared_) + ")";
}

at::Tensor FireEncoding::bias(int layer, int64_t head_begin, int64_t n_heads,
                              const at::Tensor& i, const at::Tensor& j) const {
  return fire_bias(params_.at(static_cast<size_t>(layer)), i, j, head_begin, n_heads);
}

ComponentRecipe fire_recipe(const PositionComponentSpec& spec, const PositionContext& c) {
  const ComponentParams p(spec, {"hidden", "shared"});
  p.require_causal(c);
  const int64_t hidden = p.integer("hidden", 32);
  p.at_least("hidden", hidden, 1);
  const bool shared = p.flag("shared", false);
  // Init (the FIRE reference): nn.Linear's default for the MLP, c = init_c = 0.1 and
  // L_thr = init_L = 512, both learned.
  const auto in1 = WeightInit::linear_default(1), in2 = WeightInit::linear_default(hidden);
  return {{{"fire_mlp1.weight", {hidden, 1}, !shared, false, in1},
           {"fire_mlp1.bias", {hidden}, !shared, false, in1},
           {"fire_mlp2.weight", {c.n_heads, hidden}, !shared, false, in2},
           {"fire_mlp2.bias", {c.n_heads}, !shared, false, in2},
           {"fire_c", {1}, !shared, false, {WeightInit::Kind::Constant, 0.1}},
           {"fire_l_thr", {1}, !shared, false, {WeightInit::Kind::Constant, 512.0}}},
          [=](const PositionWeights& w) {
            const auto w1 = w.per_layer("fire_mlp1.weight", shared);
            const auto b1 = w.per_layer("fire_mlp1.bias", shared);
            const auto w2 = w.per_layer("fire_mlp2.weight", shared);
            const auto b2 = w.per_layer("fire_mlp2.bias", shared);
            const auto cs = w.per_layer("fire_c", shared), ls = w.per_layer("fire_l_thr", shared);
            std::vector<FireParams> layers;
            for (size_t l = 0; l < w1.size(); ++l)
              layers.push_back({w1[l], b1[l], w2[l], b2[l], cs[l], ls[l]});
            return std::make_unique<FireEncoding>(std::move(layers), shared);
          }};
}

}  // namespace poslens
