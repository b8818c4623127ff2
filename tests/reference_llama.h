#pragma once
// An independent reference for the Llama block, written the way llama2.c's run.c computes it:
// plain loops over std::vector<float>, one position at a time with a KV cache, double
// accumulators. It shares no code with the LibTorch runtime, so agreement is evidence.
#include <cmath>
#include <vector>

namespace poslens::test {

struct ReferenceLlama {
  int dim = 0, hidden = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, vocab = 0;
  bool interleaved = true;  // RoPE pairs (2c, 2c+1); false: HF half-split (c, c + d/2)
  double theta = 10000.0, eps = 1e-5;
  // Row-major [out][in] matrices, per layer.
  std::vector<float> embedding, rms_final, classifier;  // [vocab*dim], [dim], [vocab*dim]
  std::vector<std::vector<float>> rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3;
  std::vector<std::vector<float>> bq, bk, bv;  // per layer; empty: no biases (Qwen2 has them)
  int window = 0;  // > 0: query i sees keys with i - j < window (Mistral sliding window)
  double position_scale = 1.0;  // rotation angle uses pos * position_scale (linear RoPE scaling)

  static void matvec(const std::vector<float>& w, const std::vector<double>& x, int out,
                     std::vector<double>& y) {
    const int in = static_cast<int>(x.size());
    y.assign(static_cast<size_t>(out), 0.0);
    for (int o = 0; o < out; ++o) {
      double s = 0;
      for (int i = 0; i < in; ++i) s += static_cast<double>(w[static_cast<size_t>(o) * in + i]) * x[i];
      y[o] = s;
    }
  }

  std::vector<double> rmsnorm(const std::vector<double>& x, const std::vector<float>& w) const {
    double ss = 0;
    for (double v : x) ss += v * v;
    const double scale = 1.0 / std::sqrt(ss / x.size() + eps);
    std::vector<double> out(x.size());
    for (size_t i = 0; i < x.size(); ++i) out[i] = w[i] * (x[i] * scale);
    return out;
  }

  void rope(std::vector<double>& v, int n, int pos) const {
    const int hs = dim / n_heads;
    for (int h = 0; h < n; ++h)
      for (int c = 0; c < hs / 2; ++c) {
        const double freq = std::pow(theta, -2.0 * c / hs), a = pos * position_scale * freq;
        const int i0 = h * hs + (interleaved ? 2 * c : c);
        const int i1 = h * hs + (interleaved ? 2 * c + 1 : c + hs / 2);
        const double x0 = v[i0], x1 = v[i1];
        v[i0] = x0 * std::cos(a) - x1 * std::sin(a);
        v[i1] = x0 * std::sin(a) + x1 * std::cos(a);
      }
  }

  /// Logits [pos][vocab] for `tokens`, causal attention over the prefix.
  std::vector<std::vector<double>> forward(const std::vector<int64_t>& tokens) const {
    const int hs = dim / n_heads, kv_dim = hs * n_kv_heads, group = n_heads / n_kv_heads;
    const size_t T = tokens.size();
    std::vector<std::vector<std::vector<double>>> kcache(n_layers), vcache(n_layers);
    std::vector<std::vector<double>> logits;
    for (size_t pos = 0; pos < T; ++pos) {
      std::vector<double> x(dim);
      for (int i = 0; i < dim; ++i) x[i] = embedding[static_cast<size_t>(tokens[pos]) * dim + i];
      for (int l = 0; l < n_layers; ++l) {
        const auto xb = rmsnorm(x, rms_att[l]);
        std::vector<double> q, k, v;
        matvec(wq[l], xb, dim, q);
        matvec(wk[l], xb, kv_dim, k);
        matvec(wv[l], xb, kv_dim, v);
        if (!bq.empty())
          for (int i = 0; i < dim; ++i) q[i] += bq[l][i];
        if (!bk.empty())
          for (int i = 0; i < kv_dim; ++i) k[i] += bk[l][i], v[i] += bv[l][i];
        rope(q, n_heads, static_cast<int>(pos));
        rope(k, n_kv_heads, static_cast<int>(pos));
        kcache[l].push_back(k);
        vcache[l].push_back(v);
        std::vector<double> att_out(dim, 0.0);
        for (int h = 0; h < n_heads; ++h) {
          const int kvh = h / group;
          std::vector<double> score(pos + 1, -1e300);
          const size_t first = window > 0 && pos + 1 > static_cast<size_t>(window) ? pos + 1 - window : 0;
          double mx = -1e300;
          for (size_t t = first; t <= pos; ++t) {
            double s = 0;
            for (int i = 0; i < hs; ++i) s += q[h * hs + i] * kcache[l][t][kvh * hs + i];
            score[t] = s / std::sqrt(static_cast<double>(hs));
            mx = std::max(mx, score[t]);
          }
          double sum = 0;
          for (size_t t = first; t <= pos; ++t) sum += (score[t] = std::exp(score[t] - mx));
          for (size_t t = first; t <= pos; ++t)
            for (int i = 0; i < hs; ++i)
              att_out[h * hs + i] += score[t] / sum * vcache[l][t][kvh * hs + i];
        }
        std::vector<double> o;
        matvec(wo[l], att_out, dim, o);
        for (int i = 0; i < dim; ++i) x[i] += o[i];
        const auto hb = rmsnorm(x, rms_ffn[l]);
        std::vector<double> g, u, d;
        matvec(w1[l], hb, hidden, g);
        matvec(w3[l], hb, hidden, u);
        for (int i = 0; i < hidden; ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
        matvec(w2[l], g, dim, d);
        for (int i = 0; i < dim; ++i) x[i] += d[i];
      }
      std::vector<double> out;
      matvec(classifier, rmsnorm(x, rms_final), vocab, out);
      logits.push_back(out);
    }
    return logits;
  }
};

}  // namespace poslens::test
