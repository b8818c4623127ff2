#include "core/runtime/blocks.h"

#include <torch/torch.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "core/base/error.h"
#include "core/runtime/mixture_of_experts.h"

namespace poslens::blocks {
namespace {

/// RMSNorm (Zhang & Sennrich 2019, as in HF LlamaRMSNorm): normalised in float32, then scaled.
/// With a weight offset (Gemma) or `gain_in_float32` (ModelConfig::norm_gain_in_float32: OLMo 2,
/// gpt-oss, Gemma 4) the scaling is done in float32 before the cast, as HF GemmaRMSNorm /
/// Olmo2RMSNorm do: (normed * (offset + w)).to(dtype).
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps, double offset,
                    bool gain_in_float32 = false) {
  const auto xf = x.to(torch::kFloat32);
  const auto normed = xf * torch::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
  if (offset != 0.0 || gain_in_float32) return (normed * (weight.to(torch::kFloat32) + offset)).to(x.scalar_type());
  return weight * normed.to(x.scalar_type());
}

at::Tensor mlp_whole(const ModelConfig& c, const LayerWeights& w, const at::Tensor& h) {
  if (c.mlp == MlpType::MoE) return mixture_of_experts(c, w, h);
  if (c.mlp == MlpType::Gated) return gated_mlp(c, w, h);
  return at::linear(activation(c.activation, at::linear(h, w.w_up, w.b_up)), w.w_down, w.b_down);
}

const at::Tensor kNone;  // the absent bias of a cross-attention projection

/// RMSNorm of MLA's latents (HF DeepseekV2RMSNorm built with its default eps, 1e-6).
constexpr double kLatentNormEps = 1e-6;

/// `x` [..., heads, d_head] with each head's last `rotary` channels moved first.
at::Tensor rotary_first(const at::Tensor& x, int64_t rotary) {
  const int64_t nope = x.size(-1) - rotary;
  return at::cat({x.narrow(-1, nope, rotary), x.narrow(-1, 0, nope)}, -1);
}

/// Multi-head latent attention's q, k, v (ModelConfig::latent_attention(); HF
/// DeepseekV2Attention.forward up to the rotation), channels rotary first.
QueryKeyValue latent_query_key_value(const ModelConfig& c, const Projections& w, const at::Tensor& h) {
  const int64_t B = h.size(0), T = h.size(1), H = c.n_heads, rope = c.qk_rope_head_dim, nope = c.d_head - rope;
  const auto q_in = c.q_lora_rank > 0 ? rms_norm(at::linear(h, w.w_q_a), w.q_a_norm, kLatentNormEps, 0.0) : h;
  const auto q = rotary_first(at::linear(q_in, w.w_q).view({B, T, H, c.d_head}), rope);
  const auto compressed = at::linear(h, w.w_kv_a);  // [B, T, kv_lora_rank + rope]
  const auto latent = rms_norm(compressed.narrow(-1, 0, c.kv_lora_rank), w.kv_a_norm, kLatentNormEps, 0.0);
  const auto k_rope = compressed.narrow(-1, c.kv_lora_rank, rope).view({B, T, 1, rope}).expand({B, T, H, rope});
  const auto kv = at::linear(latent, w.w_kv_b).view({B, T, H, nope + c.value_head_dim()});
  return {q, at::cat({k_rope, kv.narrow(-1, 0, nope)}, -1), kv.narrow(-1, nope, c.value_head_dim())};
}

}  // namespace

at::Tensor unit_rms(const at::Tensor& x, double eps) {
  const auto xf = x.to(torch::kFloat32);
  return (xf * torch::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps)).to(x.scalar_type());
}

at::Tensor gated_mlp(const ModelConfig& c, const LayerWeights& w, const at::Tensor& h) {
  const auto gate = activation(c.activation, at::linear(h, w.w_gate, w.b_gate));
  return at::linear(gate * at::linear(h, w.w_up, w.b_up), w.w_down, w.b_down);
}

at::Tensor projection(const ModelConfig& c, const at::Tensor& h, const at::Tensor& weight, const at::Tensor& bias,
                      int64_t heads) {
  auto out = at::linear(h, weight, bias);
  if (c.clip_qkv > 0) out = out.clamp(-c.clip_qkv, c.clip_qkv);
  return out.view({h.size(0), h.size(1), heads, c.d_head});
}

at::Tensor norm(const ModelConfig& c, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  if (c.norm == NormType::RMSNorm) return rms_norm(x, weight, c.norm_eps, c.norm_weight_offset, c.norm_gain_in_float32);
  const auto g = weight.defined() ? weight.to(torch::kFloat32) : at::Tensor();
  const auto b = bias.defined() ? bias.to(torch::kFloat32) : at::Tensor();
  return at::layer_norm(x.to(torch::kFloat32), {x.size(-1)}, g, b, c.norm_eps).to(x.scalar_type());
}

at::Tensor activation(Activation a, const at::Tensor& x) {
  switch (a) {
    case Activation::SiLU: return at::silu(x);
    case Activation::GeluNew: return at::gelu(x, "tanh");
    case Activation::GeluExact: return at::gelu(x);
    case Activation::ReLU: return at::relu(x);
  }
  return x;
}

at::Tensor token_embedding(const ModelConfig& c, const ModelWeights& w, const at::Tensor& ids) {
  auto x = w.tok_embed.index_select(0, ids.flatten()).view({ids.size(0), ids.size(1), c.d_model});
  if (c.embed_scale != 1.0) x = x * torch::scalar_tensor(c.embed_scale, x.options());
  return x;
}

at::Tensor embedding(const Pass& p, const ModelWeights& w, const at::Tensor& ids, const at::Tensor& token_types) {
  const auto& c = p.config;
  auto x = token_embedding(c, w, ids);
  p.emit(HookKind::Embed, -1, x);
  if (w.token_type_embed.defined()) {
    // Type 0 everywhere unless given (HF BertModel's default token_type_ids).
    x = token_types.defined()
            ? x + w.token_type_embed.index_select(0, token_types.flatten()).view(x.sizes())
            : x + w.token_type_embed[0];
  }
  if (p.pe.has_input_term()) {
    const auto input = p.pe.input_term(x, p.positions);
    p.emit(HookKind::PeState, -1, input.pe_state);
    p.emit(HookKind::PosEmbed, -1, input.added);
    x = x + input.added;
  }
  return embedding_norm(c, w, x);
}

at::Tensor embedding_norm(const ModelConfig& c, const ModelWeights& w, const at::Tensor& x) {
  return c.embed_norm ? norm(c, x, w.embed_norm, w.embed_norm_bias) : x;
}

Projections self_attention(const LayerWeights& w) {
  return {w.w_q,  w.b_q,    w.w_k,    w.b_k,  w.w_v,  w.b_v,    w.w_o,     w.b_o,
          w.q_norm, w.k_norm, w.attn_sinks, w.w_q_a, w.q_a_norm, w.w_kv_a, w.kv_a_norm, w.w_kv_b};
}

Projections cross_attention(const LayerWeights& w) {
  return {w.w_cq, kNone, w.w_ck, kNone, w.w_cv, kNone, w.w_co, kNone,
          kNone,  kNone, kNone,  kNone, kNone,  kNone, kNone,  kNone};
}

at::Tensor qk_norm(const ModelConfig& c, const at::Tensor& x, const at::Tensor& weight) {
  if (c.qk_norm == QkNorm::L2) return unit_rms(x, c.norm_eps);  // HF Llama4TextL2Norm: in float32, no gain
  if (c.qk_norm == QkNorm::None || !weight.defined()) return x;
  if (c.qk_norm == QkNorm::PerHead) return rms_norm(x, weight, c.norm_eps, c.norm_weight_offset, c.norm_gain_in_float32);
  return rms_norm(x.flatten(2), weight, c.norm_eps, c.norm_weight_offset, c.norm_gain_in_float32).view(x.sizes());
}

at::Tensor query_temperature(const ModelConfig& c, const at::Tensor& q, const at::Tensor& positions) {
  if (c.attn_temperature_scale == 0.0) return q;
  // HF Llama4TextAttention: log1p(floor((pos + 1) / floor_scale)) * attn_scale + 1, in float32.
  const auto pos = positions.to(torch::kFloat32);
  const auto scales = torch::log1p(torch::floor((pos + 1.0) / static_cast<double>(c.attn_temperature_floor))) *
                          c.attn_temperature_scale + 1.0;
  return (q * scales.view({1, -1, 1, 1})).to(q.scalar_type());
}

QueryKeyValue query_key_value(const ModelConfig& c, const Projections& w, const at::Tensor& h,
                              const at::Tensor& positions, const at::Tensor& kv_input) {
  if (c.latent_attention()) {
    auto qkv = latent_query_key_value(c, w, h);
    qkv.q = query_temperature(c, qkv.q, positions);
    return qkv;
  }
  auto q = query_temperature(c, qk_norm(c, projection(c, h, w.w_q, w.b_q, c.n_heads), w.q_norm), positions);
  if (c.kv_source_layer >= 0) return {std::move(q), {}, {}};
  const auto& kv_in = kv_input.defined() ? kv_input : h;
  const auto k = projection(c, kv_in, w.w_k, w.b_k, c.n_kv_heads);
  auto v = c.values_from_keys ? k : projection(c, kv_in, w.w_v, w.b_v, c.n_kv_heads);
  if (c.v_norm) v = unit_rms(v, c.norm_eps);
  return {std::move(q), qk_norm(c, k, w.k_norm), std::move(v)};
}

/// Layer `l`'s keys and values from the layer it reuses them from, or its own, kept for the
/// layers that will reuse them (Pass::shared_kv).
void shared_keys_values(const Pass& p, int l, QueryKeyValue& qkv) {
  const auto& c = p.config;
  if (!p.shared_kv) {
    if (c.kv_source_layer >= 0) throw Error("layer " + std::to_string(l) + " reuses another layer's keys: no store given");
    return;
  }
  if (c.kv_source_layer >= 0) {
    const auto it = p.shared_kv->by_layer.find(c.kv_source_layer);
    if (it == p.shared_kv->by_layer.end())
      throw Error("layer " + std::to_string(l) + " reuses the keys of layer " + std::to_string(c.kv_source_layer) +
                  ", which has not run");
    qkv.k = it->second.first;
    qkv.v = it->second.second;
  } else if (p.shared_kv->sources.count(l)) {
    p.shared_kv->by_layer[l] = {qkv.k, qkv.v};
  }
}

at::Tensor attention(const Pass& p, int l, const Projections& w, const at::Tensor& h, const at::Tensor& kv_input) {
  const auto& c = p.config;
  const auto& pe = p.pe;
  auto qkv = query_key_value(c, w, h, p.positions, kv_input);
  if (p.stack == HookStack::Blocks) shared_keys_values(p, l, qkv);
  auto q = std::move(qkv.q), k = std::move(qkv.k);
  const auto v = std::move(qkv.v);
  const int64_t key_length = k.size(1);
  p.emit(HookKind::Q, l, q);
  p.emit(HookKind::K, l, k);
  p.emit(HookKind::V, l, v);
  if (pe.rotates()) {
    q = pe.rotate(q, p.positions);
    k = pe.rotate(k, p.positions);
    p.emit(HookKind::RotQ, l, q);
    p.emit(HookKind::RotK, l, k);
  }

  LayerAttentionInputs inputs{l, q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                              pe.scores_read_block_input() ? h : at::Tensor()};
  inputs.position_offset = p.position_offset;
  inputs.sinks = w.sinks;
  // Maps are recomputed from these (the GUI): self-attention of a one-stack model only.
  if (p.stack == HookStack::Blocks && p.sink.wants_attention_inputs(l)) p.sink.attention_inputs(inputs);
  BlockRequest maps;
  maps.scores = p.wants(HookKind::AttnScores, l);
  maps.pattern = p.wants(HookKind::Pattern, l);
  maps.position = pe.has_position_scores() && p.wants(HookKind::PosScores, l);
  maps.cope = pe.has_cope() && (p.wants(HookKind::CopeGates, l) || p.wants(HookKind::CopePos, l));
  at::Tensor z;  // [B, T, H, dh]; the attention's q/k/v copies are freed before the MLP
  {
    const LayerAttention layer_attention(c, pe, inputs);
    inputs = {};
    z = layer_attention.output(maps, p.blocking, [&](const AttentionBlock& b) {
      const auto hand = [&](HookKind kind, const at::Tensor& values) {
        if (values.defined() && p.wants(kind, l))
          p.sink.block({kind, l, p.stack}, {values, b.allowed, b.q_begin, b.k_begin, p.length, key_length});
      };
      hand(HookKind::AttnScores, b.scores);
      hand(HookKind::PosScores, b.position);
      hand(HookKind::CopeGates, b.cope_gates);
      hand(HookKind::CopePos, b.cope_positions);
      hand(HookKind::Pattern, b.pattern);
    });
  }
  p.emit(HookKind::Z, l, z);
  const auto attn_out = at::linear(z.view({p.batch, p.length, c.n_heads * c.value_head_dim()}), w.w_o, w.b_o);
  p.emit(HookKind::AttnOut, l, attn_out);
  return attn_out;
}

at::Tensor mlp(const Pass& p, int l, const LayerWeights& w, const at::Tensor& h) {
  // Chunks of positions keep the two or three hidden [B, rows, d_mlp] activations near
  // kMlpChunkBytes whatever T (GPT-2-small shape at 8192 tokens: 300 MB -> ~100 MB). The MLP is
  // position-wise, so the result is the same; short inputs are one chunk.
  const auto& c = p.config;
  const int64_t B = h.size(0), T = h.size(1);
  int64_t rows = p.blocking.mlp_rows;
  if (rows <= 0)
    rows = std::max<int64_t>(1, kMlpChunkBytes / (B * c.widest_mlp() * static_cast<int64_t>(h.element_size())));
  at::Tensor out;
  if (rows >= T) {
    out = mlp_whole(c, w, h);
  } else {
    std::vector<at::Tensor> parts;
    for (int64_t p0 = 0; p0 < T; p0 += rows) parts.push_back(mlp_whole(c, w, h.narrow(1, p0, std::min(rows, T - p0))));
    out = at::cat(parts, 1);
  }
  p.emit(HookKind::MlpOut, l, out);
  return out;
}

at::Tensor layer(const Pass& p, int l, const LayerWeights& w, const at::Tensor& x, const Cross* cross) {
  const auto& c = p.config;
  p.emit(HookKind::ResidPre, l, x);
  if (c.norm_placement == NormPlacement::Post) {
    // BERT: x = norm1(x + attn(x)); x = norm2(x + mlp(x)).
    const auto resid_mid = x + attention(p, l, self_attention(w), x);
    p.emit(HookKind::ResidMid, l, resid_mid);
    const auto normed_mid = norm(c, resid_mid, w.attn_norm, w.attn_norm_bias);
    const auto resid_post = normed_mid + mlp(p, l, w, normed_mid);
    p.emit(HookKind::ResidPost, l, resid_post);
    return norm(c, resid_post, w.mlp_norm, w.mlp_norm_bias);
  }
  if (c.norm_placement == NormPlacement::SublayerOutput) {
    // OLMo 2: x = x + norm1(attn(x)); x = x + norm2(mlp(x)).
    const auto resid_mid = x + norm(c, attention(p, l, self_attention(w), x), w.attn_norm, w.attn_norm_bias);
    p.emit(HookKind::ResidMid, l, resid_mid);
    const auto resid_post = resid_mid + norm(c, mlp(p, l, w, resid_mid), w.mlp_norm, w.mlp_norm_bias);
    p.emit(HookKind::ResidPost, l, resid_post);
    return resid_post;
  }
  if (c.norm_placement == NormPlacement::Sandwich) {
    // Gemma 2/3: x = x + post1(attn(norm1(x))); x = x + post2(mlp(norm2(x))).
    const auto attn_out = attention(p, l, self_attention(w), norm(c, x, w.attn_norm, w.attn_norm_bias));
    const auto resid_mid = x + norm(c, attn_out, w.attn_post_norm, {});
    p.emit(HookKind::ResidMid, l, resid_mid);
    // Gemma 4's MoE block reads resid_mid itself, each of its halves through its own norm.
    const auto mlp_out =
        mlp(p, l, w, c.experts_beside_mlp ? resid_mid : norm(c, resid_mid, w.mlp_norm, w.mlp_norm_bias));
    auto resid_post = resid_mid + norm(c, mlp_out, w.mlp_post_norm, {});
    // Gemma 4: + the per-layer input's sublayer, then the whole output times the layer scalar.
    if (p.per_layer_inputs) resid_post = add_per_layer_input(c, w, resid_post, p.per_layer_inputs->layer(l));
    if (w.layer_scalar.defined()) resid_post = resid_post * w.layer_scalar;
    p.emit(HookKind::ResidPost, l, resid_post);
    return resid_post;
  }
  // ModernBERT's layer 0 reads the embedding norm's output as it is (first_attn_norm false).
  const auto attn_in = l == 0 && !c.first_attn_norm ? x : norm(c, x, w.attn_norm, w.attn_norm_bias);
  auto resid_mid = x + attention(p, l, self_attention(w), attn_in);
  p.emit(HookKind::ResidMid, l, resid_mid);
  if (cross) {  // T5 decoder: the encoder's output read through the cross-attention
    const auto h = norm(c, resid_mid, w.cross_norm, w.cross_norm_bias);
    resid_mid = resid_mid + attention(cross->pass, l, cross_attention(w), h, cross->memory);
    cross->pass.emit(HookKind::ResidMid, l, resid_mid);
  }
  // Parallel blocks (NeoX, Phi) read the MLP input from the block input, not from resid_mid.
  const auto& mlp_in = c.parallel_residual ? x : resid_mid;
  const auto resid_post = resid_mid + mlp(p, l, w, norm(c, mlp_in, w.mlp_norm, w.mlp_norm_bias));
  p.emit(HookKind::ResidPost, l, resid_post);
  return resid_post;
}

at::Tensor head_input(const Pass& p, const ModelWeights& w, const at::Tensor& x) {
  const auto& c = p.config;
  auto y = c.final_norm ? norm(c, x, w.final_norm, w.final_norm_bias) : x;
  if (c.mlm_head)  // BertLMPredictionHead's transform: dense -> act -> LayerNorm
    y = norm(c, activation(c.activation, at::linear(y, w.head_dense, w.head_dense_bias)), w.head_norm,
             w.head_norm_bias);
  p.emit(HookKind::LnFinal, -1, y);
  return y;
}

QkInputNorm attention_input_norm(const ModelConfig& c, const ModelWeights& w, int l) {
  const auto& layer = w.layers.at(static_cast<size_t>(l));
  if (l == 0 && !c.first_attn_norm) return {};  // ModernBERT: the residual stream as it is
  if (c.norm_placement == NormPlacement::Pre || c.norm_placement == NormPlacement::Sandwich)
    return {layer.attn_norm, layer.attn_norm_bias, true};
  if (l == 0 && c.embed_norm) return {w.embed_norm, w.embed_norm_bias, true};
  return {};
}

}  // namespace poslens::blocks
