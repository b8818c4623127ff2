#include "core/position/transformer_xl.h"

#include <torch/torch.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/base/shape_text.h"
#include "core/position/sinusoidal.h"
#include "core/position/component_params.h"

namespace poslens {

namespace {

void check_q(const at::Tensor& q, const char* where) {
  if (q.dim() != 4) throw Error(std::string(where) + ": q must be [B, H, Q, d], got " + shape_str(q));
}

// Checks a distance table [D, d] or [H, D, d] against q [B, H, Q, d]; returns D.
int64_t check_table(const at::Tensor& r, const at::Tensor& q, const char* where, const char* name) {
  const bool ok = (r.dim() == 2 && r.size(1) == q.size(3)) ||
                  (r.dim() == 3 && r.size(0) == q.size(1) && r.size(2) == q.size(3));
  if (!ok)
    throw Error(std::string(where) + ": " + name + " must be [D, d] or [H, D, d] matching q " +
                shape_str(q) + ", got " + shape_str(r));
  return r.size(-2);
}

void check_head_vector(const at::Tensor& u, const at::Tensor& q, const char* where, const char* name) {
  if (u.dim() != 2 || u.size(0) != q.size(1) || u.size(1) != q.size(3))
    throw Error(std::string(where) + ": " + name + " must be [H, d] matching q " + shape_str(q) +
                ", got " + shape_str(u));
}

// x [B, H, Q, d] times table [D, d] / [H, D, d] transposed -> [B, H, Q, D].
at::Tensor against(const at::Tensor& x, const at::Tensor& table) {
  return torch::matmul(x, table.transpose(-1, -2));
}

// [Q, K] bool: true where key j is in the causal past of query i (j <= i + K - Q).
at::Tensor causal_allowed(int64_t q_len, int64_t k_len, const torch::Device& device) {
  return torch::ones({q_len, k_len}, torch::TensorOptions().dtype(torch::kBool).device(device))
      .tril(k_len - q_len);
}

}  // namespace

at::Tensor rel_shift(const at::Tensor& x) {
  if (x.dim() < 2) throw Error("rel_shift: x must be [..., Q, K], got " + shape_str(x));
  const int64_t q_len = x.size(-2), k_len = x.size(-1);
  if (q_len > k_len)
    throw Error("rel_shift: query length " + std::to_string(q_len) + " > key length " +
                std::to_string(k_len));
  std::vector<int64_t> lead(x.sizes().begin(), x.sizes().end() - 2);
  auto pad_shape = lead;
  pad_shape.insert(pad_shape.end(), {q_len, 1});
  const auto padded = torch::cat({torch::zeros(pad_shape, x.options()), x}, -1);  // [..., Q, K+1]
  auto tall = lead;
  tall.insert(tall.end(), {k_len + 1, q_len});
  auto out_shape = lead;
  out_shape.insert(out_shape.end(), {q_len, k_len});
  return padded.reshape(tall).narrow(-2, 1, k_len).reshape(out_shape);
}

at::Tensor rel_shift_right(const at::Tensor& x) {
  if (x.dim() < 2 || x.size(-2) != x.size(-1))
    throw Error("rel_shift_right: x must be [..., T, T], got " + shape_str(x));
  const int64_t t = x.size(-1);
  std::vector<int64_t> lead(x.sizes().begin(), x.sizes().end() - 2);
  auto pad_shape = lead;
  pad_shape.insert(pad_shape.end(), {t, 1});
  const auto padded = torch::cat({x, torch::zeros(pad_shape, x.options())}, -1);  // [..., T, T+1]
  auto tall = lead;
  tall.insert(tall.end(), {t + 1, t});
  return padded.reshape(tall).narrow(-2, 0, t).reshape(x.sizes());
}

at::Tensor rel_shift_bidirectional(const at::Tensor& x_left, const at::Tensor& x_right) {
  if (x_left.dim() < 2 || x_left.size(-2) != x_left.size(-1) || !x_left.sizes().equals(x_right.sizes()))
    throw Error("rel_shift_bidirectional: x_left and x_right must both be [..., T, T], got " +
                shape_str(x_left) + " and " + shape_str(x_right));
  const int64_t t = x_left.size(-1);
  const auto lower = torch::ones({t, t}, torch::TensorOptions().dtype(torch::kBool).device(x_left.device()))
                         .tril();
  return torch::where(lower, rel_shift(x_left), rel_shift_right(x_right));
}

at::Tensor relative_scores_direct(const at::Tensor& q, const at::Tensor& r_by_distance,
                                  int64_t k_len, bool bidirectional) {
  check_q(q, "relative_scores_direct");
  const int64_t n_dist = check_table(r_by_distance, q, "relative_scores_direct", "r_by_distance");
  const int64_t q_len = q.size(2);
  if (q_len > k_len)
    throw Error("relative_scores_direct: query length " + std::to_string(q_len) + " > k_len " +
                std::to_string(k_len));
  const int64_t mem = k_len - q_len;
  const int64_t max_dist = bidirectional ? std::max(q_len - 1 + mem, k_len - 1 - mem) : k_len - 1;
  if (n_dist <= max_dist)
    throw Error("relative_scores_direct: the table has " + std::to_string(n_dist) +
                " distances, " + std::to_string(max_dist + 1) + " are needed");
  const auto opts = torch::TensorOptions().dtype(torch::kLong).device(q.device());
  // dist[i, j] = i + M - j
  const auto dist = torch::arange(q_len, opts).unsqueeze(1) + mem - torch::arange(k_len, opts).unsqueeze(0);
  const auto index = bidirectional ? dist.abs() : dist.clamp_min(0);
  const auto per_distance = against(q, r_by_distance);  // [B, H, Q, D]
  const auto idx = index.expand({q.size(0), q.size(1), q_len, k_len});
  auto out = per_distance.gather(3, idx);
  if (!bidirectional) out = out.masked_fill(dist.lt(0), 0);
  return out;
}

at::Tensor relative_scores_shifted(const at::Tensor& q, const at::Tensor& r_by_distance,
                                   int64_t k_len) {
  check_q(q, "relative_scores_shifted");
  const int64_t n_dist = check_table(r_by_distance, q, "relative_scores_shifted", "r_by_distance");
  if (q.size(2) > k_len || n_dist < k_len)
    throw Error("relative_scores_shifted: need Q <= k_len <= D, got Q=" + std::to_string(q.size(2)) +
                " k_len=" + std::to_string(k_len) + " D=" + std::to_string(n_dist));
  const auto descending = r_by_distance.narrow(-2, 0, k_len).flip({-2});  // row c = distance K-1-c
  const auto shifted = rel_shift(against(q, descending));
  return shifted.masked_fill(causal_allowed(q.size(2), k_len, q.device()).logical_not(), 0);
}

at::Tensor relative_scores_bidirectional(const at::Tensor& q, const at::Tensor& r_by_distance) {
  check_q(q, "relative_scores_bidirectional");
  const int64_t n_dist =
      check_table(r_by_distance, q, "relative_scores_bidirectional", "r_by_distance");
  const int64_t t = q.size(2);
  if (n_dist < t)
    throw Error("relative_scores_bidirectional: the table has " + std::to_string(n_dist) +
                " distances, " + std::to_string(t) + " are needed");
  const auto ascending = r_by_distance.narrow(-2, 0, t);
  return rel_shift_bidirectional(against(q, ascending.flip({-2})), against(q, ascending));
}

at::Tensor txl_relative_embedding(int64_t k_len, int64_t d_model) {
  if (k_len < 1) throw Error("txl_relative_embedding: k_len " + std::to_string(k_len) + " < 1");
  return sinusoidal_embedding(torch::arange(k_len - 1, -1, -1, torch::kFloat64), d_model,
                              SinusoidalLayout::Concatenated);
}

at::Tensor txl_position_scores(const at::Tensor& q, const at::Tensor& r_proj, const at::Tensor& v,
                               double scale) {
  check_q(q, "txl_position_scores");
  const int64_t k_len = check_table(r_proj, q, "txl_position_scores", "r_proj");
  check_head_vector(v, q, "txl_position_scores", "v");
  if (q.size(2) > k_len)
    throw Error("txl_position_scores: query length " + std::to_string(q.size(2)) +
                " > key length " + std::to_string(k_len));
  const auto qv = q + v.unsqueeze(0).unsqueeze(2);  // [B, H, Q, d]
  const auto bd = rel_shift(against(qv, r_proj));
  return bd.masked_fill(causal_allowed(q.size(2), k_len, q.device()).logical_not(), 0) * scale;
}

namespace reference {

at::Tensor txl_scores(const at::Tensor& q, const at::Tensor& k, const at::Tensor& r_proj,
                      const at::Tensor& u, const at::Tensor& v, double scale) {
  check_q(q, "txl_scores");
  if (k.dim() != 4 || k.size(0) != q.size(0) || k.size(1) != q.size(1) || k.size(3) != q.size(3))
    throw Error("txl_scores: k must be [B, H, K, d] matching q " + shape_str(q) + ", got " +
                shape_str(k));
  const int64_t k_len = check_table(r_proj, q, "txl_scores", "r_proj");
  if (k_len != k.size(2))
    throw Error("txl_scores: r_proj has " + std::to_string(k_len) + " distances, k has " +
                std::to_string(k.size(2)) + " keys");
  check_head_vector(u, q, "txl_scores", "u");
  const auto qu = q + u.unsqueeze(0).unsqueeze(2);
  const auto content = torch::matmul(qu, k.transpose(-1, -2)) * scale;  // AC
  return content + txl_position_scores(q, r_proj, v, scale);              // + BD
}

}  // namespace reference

TransformerXlEncoding::TransformerXlEncoding(std::vector<TxlWeights> layers, int64_t n_heads,
                                             int64_t d_head, bool causal, bool shared)
    : layers_(std::move(layers)), n_heads_(n_heads), d_head_(d_head), causal_(causal), shared_(shared) {
  for (const auto& w : layers_) {
    if (!w.r_proj.defined() || !w.u.defined() || !w.v.defined())
      throw Error("transformer_xl position encoding: a weight is missing");
    if (w.r_proj.dim() != 2 || w.r_proj.size(0) != n_heads * d_head ||
        w.u.sizes() != at::IntArrayRef{n_heads, d_head} || w.v.sizes() != w.u.sizes())
      throw Error("transformer_xl position encoding: expected W_R [" +
                  std::to_string(n_heads * d_head) + ", d_model] and u, v [" +
                  std::to_string(n_heads) + ", " + std::to_string(d_head) + "], got " +
                  shape_str(w.r_proj) + ", " + shape_str(w.u) + ", " + shape_str(w.v));
  }
}

std::string TransformerXlEncoding::describe() const {
  return std::string("Transformer-XL relative (") + (causal_ ? "causal" : "bi-directional") +
         (shared_ ? ", shared across layers" : ", per layer") + ")";
}

void TransformerXlEncoding::add_score_terms(const AttentionInputs& in, ScoreTerms& out) const {
  const auto& w = layers_.at(static_cast<size_t>(in.layer));
  const int64_t T = in.length, d_model = w.r_proj.size(1), Hs = in.heads();
  const auto f32 = torch::kFloat32;
  const auto q = in.q.to(f32);
  const auto u = w.u.to(f32).narrow(0, in.head_begin, Hs), v = w.v.to(f32).narrow(0, in.head_begin, Hs);
  // W_R R_t for every distance t = 0..T-1 and every head, [H, T, d_head]: O(T·d) once per
  // layer, reused by each block.
  const auto table = in.cached("txl.r_proj", [&] {
    const auto r = sinusoidal_embedding(torch::arange(T, torch::kFloat64), d_model,
                                        SinusoidalLayout::Concatenated);
    return at::linear(r.to(q.device(), f32), w.r_proj.to(f32))
        .view({T, n_heads_, d_head_})
        .permute({1, 0, 2})
        .contiguous();
  });
  // dist(i, j) = i - j (causal; future keys masked) or |i - j| (Kernes 2021's bi-directional form).
  const auto dist = in.q_pos.unsqueeze(1) - in.k_pos.unsqueeze(0);  // [rows, keys]
  const auto index = causal_ ? dist.clamp_min(0) : dist.abs();
  const int64_t q_last = in.q_begin + in.q.size(2) - 1, k_last = in.k_begin + in.k.size(2) - 1;
  const int64_t needed =
      std::max<int64_t>({q_last - in.k_begin, causal_ ? 0 : k_last - in.q_begin, 0}) + 1;
  const auto rows = table.narrow(0, in.head_begin, Hs).narrow(1, 0, needed);  // [Hs, D, dh]
  const auto per_distance = torch::matmul(q + v.view({1, Hs, 1, d_head_}), rows.transpose(-1, -2));
  auto position = per_distance.gather(3, index.expand({q.size(0), Hs, index.size(0), index.size(1)}));
  if (causal_) position = position.masked_fill(dist.lt(0), 0);
  ScoreTerms::add(out.position, position * in.scale);
  // u·k_j: the same for every query (a per-key content bias).
  const auto uk = torch::matmul(u.view({1, Hs, 1, d_head_}), in.k.to(f32).transpose(-1, -2));
  ScoreTerms::add(out.content, uk * in.scale);
}

ComponentRecipe transformer_xl_recipe(const PositionComponentSpec& spec, const PositionContext& c) {
  const ComponentParams p(spec, {"shared"});
  const bool shared = p.flag("shared", false);
  const int64_t H = c.n_heads, dh = c.d_head;
  if (c.d_model % 2) throw Error(p.where() + ": d_model must be even (sinusoidal R)");
  const bool causal = c.causal;
  // Init: N(0, 0.02²) for r_net, r_w_bias and r_r_bias, kimiyoung/transformer-xl's
  // init="normal", init_std=0.02.
  const WeightInit init{WeightInit::Kind::Normal, 0.02};
  return {{{"txl_r_proj.weight", {H * dh, c.d_model}, !shared, false, init},
           {"txl_u", {H, dh}, !shared, false, init},
           {"txl_v", {H, dh}, !shared, false, init}},
          [=](const PositionWeights& w) {
            const auto r = w.per_layer("txl_r_proj.weight", shared);
            const auto u = w.per_layer("txl_u", shared), v = w.per_layer("txl_v", shared);
            std::vector<TxlWeights> layers;
            for (size_t l = 0; l < r.size(); ++l) layers.push_back({r[l], u[l], v[l]});
            return std::make_unique<TransformerXlEncoding>(std::move(layers), H, dh, causal, shared);
          }};
}

}  // namespace poslens
