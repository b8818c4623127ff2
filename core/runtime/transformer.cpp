#include "core/runtime/transformer.h"

#include <torch/torch.h>

#include <cmath>
#include <limits>

#include "core/base/error.h"

namespace poslens {
namespace {

/// The forward's side of the sink: asks it what it wants and hands it what was made.
class Emit {
 public:
  explicit Emit(HookSink& sink) : sink_(sink) {}
  bool wants(HookKind kind, int layer) const { return sink_.wants({kind, layer}); }
  void operator()(HookKind kind, int layer, const at::Tensor& t) const {
    if (t.defined() && wants(kind, layer)) sink_.tensor({kind, layer}, t, 0);
  }

 private:
  HookSink& sink_;
};

/// RMSNorm (Zhang & Sennrich 2019, as in HF LlamaRMSNorm): normalised in float32, then scaled.
/// With a weight offset (Gemma) the scaling is done in float32 before the cast, as HF
/// GemmaRMSNorm does: (normed * (offset + w)).to(dtype).
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps, double offset) {
  const auto xf = x.to(torch::kFloat32);
  const auto normed = xf * torch::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
  if (offset != 0.0) return (normed * (weight.to(torch::kFloat32) + offset)).to(x.scalar_type());
  return weight * normed.to(x.scalar_type());
}

at::Tensor norm(const ModelConfig& c, const at::Tensor& x, const at::Tensor& weight,
                const at::Tensor& bias) {
  if (c.norm == NormType::RMSNorm) return rms_norm(x, weight, c.norm_eps, c.norm_weight_offset);
  // Undefined weight and bias: non-parametric LayerNorm (OLMo).
  const auto g = weight.defined() ? weight.to(torch::kFloat32) : at::Tensor();
  const auto b = bias.defined() ? bias.to(torch::kFloat32) : at::Tensor();
  return at::layer_norm(x.to(torch::kFloat32), {x.size(-1)}, g, b, c.norm_eps)
      .to(x.scalar_type());
}

at::Tensor activation(Activation a, const at::Tensor& x) {
  switch (a) {
    case Activation::SiLU: return at::silu(x);
    case Activation::GeluNew: return at::gelu(x, "tanh");
    case Activation::GeluExact: return at::gelu(x);
  }
  return x;
}

at::Tensor mlp(const ModelConfig& c, const LayerWeights& w, const at::Tensor& h) {
  if (c.mlp == MlpType::Gated) {
    const auto gate = activation(c.activation, at::linear(h, w.w_gate, w.b_gate));
    return at::linear(gate * at::linear(h, w.w_up, w.b_up), w.w_down, w.b_down);
  }
  return at::linear(activation(c.activation, at::linear(h, w.w_up, w.b_up)), w.w_down, w.b_down);
}

/// mlp() over chunks of positions, so its two or three hidden [B, rows, d_mlp] activations stay
/// near kMlpChunkBytes whatever T (GPT-2-small shape at 8192 tokens: 300 MB -> ~100 MB). The
/// MLP is position-wise, so the result is the same; short inputs are one chunk. `rows` > 0
/// forces the chunk (AttentionBlocking::mlp_rows).
at::Tensor mlp_in_chunks(const ModelConfig& c, const LayerWeights& w, const at::Tensor& h, int64_t rows) {
  const int64_t B = h.size(0), T = h.size(1);
  if (rows <= 0)
    rows = std::max<int64_t>(1, kMlpChunkBytes / (B * c.d_mlp * static_cast<int64_t>(h.element_size())));
  if (rows >= T) return mlp(c, w, h);
  std::vector<at::Tensor> parts;
  for (int64_t p0 = 0; p0 < T; p0 += rows) parts.push_back(mlp(c, w, h.narrow(1, p0, std::min(rows, T - p0))));
  return at::cat(parts, 1);
}

}  // namespace

at::Tensor allowed_keys(const ModelConfig& c, int64_t T, c10::Device device) {
  return allowed_block(c, 0, T, 0, T, device);
}

Transformer::Transformer(ModelConfig config, ModelWeights weights)
    : config_(std::move(config)), weights_(std::move(weights)) {
  config_.validate();
  if (static_cast<int64_t>(weights_.layers.size()) != config_.n_layers)
    throw Error("model weights have " + std::to_string(weights_.layers.size()) + " layers, config " +
                std::to_string(config_.n_layers));
  if (!weights_.unembed.defined()) weights_.unembed = weights_.tok_embed;  // tied
  position_ = make_components_encoding(config_.pe_components, config_.position_context(), weights_.pe);
}

c10::Device Transformer::device() const { return weights_.tok_embed.device(); }
c10::ScalarType Transformer::dtype() const { return weights_.tok_embed.scalar_type(); }

std::vector<HookPoint> Transformer::hook_points() const {
  const auto& pe = *position_;
  std::vector<HookPoint> points{{HookKind::Embed, -1}};
  if (pe.has_pe_state()) points.push_back({HookKind::PeState, -1});
  if (pe.has_input_term()) points.push_back({HookKind::PosEmbed, -1});
  for (int l = 0; l < config_.n_layers; ++l) {
    for (auto kind : {HookKind::ResidPre, HookKind::Q, HookKind::K, HookKind::V})
      points.push_back({kind, l});
    if (pe.rotates()) {
      points.push_back({HookKind::RotQ, l});
      points.push_back({HookKind::RotK, l});
    }
    if (pe.has_position_scores()) points.push_back({HookKind::PosScores, l});
    if (pe.has_cope()) {
      points.push_back({HookKind::CopeGates, l});
      points.push_back({HookKind::CopePos, l});
    }
    for (auto kind : {HookKind::AttnScores, HookKind::Pattern, HookKind::Z, HookKind::AttnOut,
                      HookKind::ResidMid, HookKind::MlpOut, HookKind::ResidPost})
      points.push_back({kind, l});
  }
  points.push_back({HookKind::LnFinal, -1});
  points.push_back({HookKind::Logits, -1});
  return points;
}

at::Tensor Transformer::forward(const at::Tensor& tokens, const CaptureSpec& spec,
                                Captures* captures, const ProgressFn& progress) const {
  Captures unused;  // no captures asked for: an empty spec wants nothing
  CaptureSink sink(captures ? spec : CaptureSpec(), captures ? *captures : unused);
  return forward(tokens, sink, progress);
}

at::Tensor Transformer::forward(const at::Tensor& tokens, HookSink& sink,
                                const ProgressFn& progress, const ForwardOptions& options) const {
  if (!tokens.defined() || tokens.dim() != 2)
    throw Error("tokens must be a 2-D [batch, pos] tensor of ids");
  if (tokens.numel() == 0) throw Error("no tokens to run (the input is empty)");
  if (at::isFloatingType(tokens.scalar_type()) || tokens.scalar_type() == torch::kBool)
    throw Error("token ids must be integers");
  // Ids given on the CPU are checked there (free). Ids already on an accelerator are not read
  // back: that would synchronise with the device on every forward (a training step's cost);
  // an out-of-range id there fails inside index_select instead.
  if (tokens.device().is_cpu()) {
    const int64_t lo = tokens.min().item<int64_t>(), hi = tokens.max().item<int64_t>();
    if (lo < 0 || hi >= config_.vocab_size)
      throw Error("token id " + std::to_string(lo < 0 ? lo : hi) +
                  " is outside the vocabulary [0, " + std::to_string(config_.vocab_size) + ")");
  }
  const auto ids = tokens.to(device(), torch::kLong);

  const auto& c = config_;
  const auto& pe = *position_;
  const int64_t B = ids.size(0), T = ids.size(1), H = c.n_heads, Hkv = c.n_kv_heads, dh = c.d_head;
  const Emit emit(sink);
  const auto positions = torch::arange(T, torch::dtype(torch::kLong).device(device()));
  const auto defaults = AttentionBlocking::from_environment();
  const auto& blocking = options.blocking;
  const AttentionBlocking block_sizes{blocking.query_rows ? blocking.query_rows : defaults.query_rows,
                                      blocking.key_chunk ? blocking.key_chunk : defaults.key_chunk,
                                      blocking.mlp_rows ? blocking.mlp_rows : defaults.mlp_rows};
  sink.begin(B, T);

  auto x = embed(ids);
  emit(HookKind::Embed, -1, x);
  if (pe.has_input_term()) {
    const auto input = pe.input_term(x, positions);
    emit(HookKind::PeState, -1, input.pe_state);
    emit(HookKind::PosEmbed, -1, input.added);
    x = x + input.added;
  }

  for (int l = 0; l < c.n_layers; ++l) {
    const auto& w = weights_.layers[static_cast<size_t>(l)];
    emit(HookKind::ResidPre, l, x);
    const auto h = norm(c, x, w.attn_norm, w.attn_norm_bias);
    auto q = at::linear(h, w.w_q, w.b_q).view({B, T, H, dh});
    auto k = at::linear(h, w.w_k, w.b_k).view({B, T, Hkv, dh});
    const auto v = at::linear(h, w.w_v, w.b_v).view({B, T, Hkv, dh});
    emit(HookKind::Q, l, q);
    emit(HookKind::K, l, k);
    emit(HookKind::V, l, v);
    if (pe.rotates()) {
      q = pe.rotate(q, positions);
      k = pe.rotate(k, positions);
      emit(HookKind::RotQ, l, q);
      emit(HookKind::RotK, l, k);
    }

    LayerAttentionInputs inputs{l, q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                pe.scores_read_block_input() ? h : at::Tensor()};
    if (sink.wants_attention_inputs(l)) sink.attention_inputs(inputs);
    BlockRequest maps;
    maps.scores = emit.wants(HookKind::AttnScores, l);
    maps.pattern = emit.wants(HookKind::Pattern, l);
    maps.position = pe.has_position_scores() && emit.wants(HookKind::PosScores, l);
    maps.cope = pe.has_cope() && (emit.wants(HookKind::CopeGates, l) || emit.wants(HookKind::CopePos, l));
    at::Tensor z;  // [B, T, H, dh]; the attention's q/k/v copies are freed before the MLP
    {
      const LayerAttention attention(c, pe, inputs);
      inputs = {};
      z = attention.output(maps, block_sizes, [&](const AttentionBlock& b) {
      const auto hand = [&](HookKind kind, const at::Tensor& values) {
        if (values.defined() && emit.wants(kind, l))
          sink.block({kind, l}, {values, b.allowed, b.q_begin, b.k_begin, T});
      };
      hand(HookKind::AttnScores, b.scores);
      hand(HookKind::PosScores, b.position);
      hand(HookKind::CopeGates, b.cope_gates);
      hand(HookKind::CopePos, b.cope_positions);
      hand(HookKind::Pattern, b.pattern);
      });
    }
    emit(HookKind::Z, l, z);
    const auto attn_out = at::linear(z.view({B, T, H * dh}), w.w_o, w.b_o);
    emit(HookKind::AttnOut, l, attn_out);
    const auto resid_mid = x + attn_out;
    emit(HookKind::ResidMid, l, resid_mid);

    // Parallel blocks read the MLP input from the block input, not from resid_mid.
    const auto& mlp_in = c.parallel_residual ? x : resid_mid;
    const auto mlp_out = mlp_in_chunks(c, w, norm(c, mlp_in, w.mlp_norm, w.mlp_norm_bias), block_sizes.mlp_rows);
    emit(HookKind::MlpOut, l, mlp_out);
    x = resid_mid + mlp_out;
    emit(HookKind::ResidPost, l, x);
    sink.layer_done(l);
    if (progress && !progress(l + 1, static_cast<int>(c.n_layers))) throw Cancelled();
  }

  x = norm(c, x, weights_.final_norm, weights_.final_norm_bias);
  emit(HookKind::LnFinal, -1, x);
  const auto unembed = [&](int64_t p0, int64_t n) {
    return at::linear(x.narrow(1, p0, n), weights_.unembed, weights_.unembed_bias).to(torch::kFloat32);
  };
  at::Tensor logits;
  if (!emit.wants(HookKind::Logits, -1)) {
    if (options.logits == LogitsReturned::All) logits = unembed(0, T);
    if (options.logits == LogitsReturned::Last) logits = unembed(T - 1, 1);
  } else {
    // In chunks of positions: [batch, T, vocab] float32 is 1 GB at 8192 tokens of a 32k vocab.
    const int64_t chunk = std::max<int64_t>(1, (int64_t{64} << 20) / (B * c.vocab_size * 4));
    std::vector<at::Tensor> parts;
    for (int64_t p0 = 0; p0 < T; p0 += chunk) {
      const int64_t n = std::min(chunk, T - p0);
      const auto part = unembed(p0, n);
      sink.tensor({HookKind::Logits, -1}, part, p0);
      if (options.logits == LogitsReturned::All) parts.push_back(part);
      if (options.logits == LogitsReturned::Last && p0 + n == T) logits = part.narrow(1, n - 1, 1);
    }
    if (options.logits == LogitsReturned::All) logits = parts.size() == 1 ? parts[0] : torch::cat(parts, 1);
  }
  sink.layer_done(-1);
  return logits;
}

at::Tensor Transformer::embed(const at::Tensor& tokens) const {
  const auto ids = tokens.to(device(), torch::kLong);
  auto x = weights_.tok_embed.index_select(0, ids.flatten()).view({ids.size(0), ids.size(1), config_.d_model});
  // The scale is rounded to the compute dtype first, as HF Gemma's `normalizer` tensor is.
  if (config_.embed_scale != 1.0) x = x * torch::scalar_tensor(config_.embed_scale, x.options());
  return x;
}

at::Tensor Transformer::qk_logits(int layer, const at::Tensor& x) const {
  const auto [q, k] = qk_projections(layer, x);
  return torch::matmul(q, k.transpose(-1, -2)) * config_.attention_scale();
}

std::pair<at::Tensor, at::Tensor> Transformer::qk_projections(int layer, const at::Tensor& x) const {
  const auto& c = config_;
  if (layer < 0 || layer >= c.n_layers)
    throw Error("layer " + std::to_string(layer) + " is out of range (the model has " +
                std::to_string(c.n_layers) + ")");
  if (x.dim() != 3 || x.size(2) != c.d_model)
    throw Error("qk_logits: x must be [batch, pos, d_model=" + std::to_string(c.d_model) + "]");
  const auto& w = weights_.layers[static_cast<size_t>(layer)];
  const int64_t B = x.size(0), T = x.size(1);
  const auto h = norm(c, x.to(device(), dtype()), w.attn_norm, w.attn_norm_bias);
  const auto q = at::linear(h, w.w_q, w.b_q).view({B, T, c.n_heads, c.d_head}).transpose(1, 2);
  auto k = at::linear(h, w.w_k, w.b_k).view({B, T, c.n_kv_heads, c.d_head}).transpose(1, 2);
  if (c.n_kv_heads != c.n_heads) k = k.repeat_interleave(c.n_heads / c.n_kv_heads, 1);
  return {q.to(torch::kFloat32), k.to(torch::kFloat32)};
}

}  // namespace poslens
