#pragma once
// Internal to the runtime: the shared blocks every architecture's forward pass is assembled
// from (llama.cpp's build_norm / build_attn / build_ffn idea): embedding, norm, attention
// sublayer, MLP sublayer, head, and the layer recipes that order them (pre-norm sequential,
// parallel, post-norm). Transformer::forward picks the recipe from ModelConfig; each block
// hands its hook points to the sink as it makes them (hook_points.h, docs/formulas.md §1).
#include <map>
#include <set>
#include <utility>

#include <ATen/core/Tensor.h>

#include "core/models/model_config.h"
#include "core/models/model_weights.h"
#include "core/position/position_encoding.h"
#include "core/runtime/attention.h"
#include "core/runtime/hook_sink.h"
#include "core/runtime/per_layer_inputs.h"
#include "core/runtime/transformer.h"

namespace poslens::blocks {

/// The keys and values layers hand on to later layers that reuse them
/// (ModelConfig::kv_source_layer, Gemma 4's KV sharing) during one forward: `sources` the layers
/// whose keys and values are read later, `by_layer` what each made (k [batch, pos, kv_heads,
/// d_head] after k_norm, before the rotation; v after v_norm).
struct SharedKeysValues {
  std::set<int64_t> sources;
  std::map<int64_t, std::pair<at::Tensor, at::Tensor>> by_layer;
};

/// What one forward pass shares with its blocks.
struct Pass {
  const ModelConfig& config;
  const PositionEncoding& pe;
  HookSink& sink;
  at::Tensor positions;       ///< int64 [T], Δ..Δ+T-1 (ForwardOptions::position_offset), on the model's device
  AttentionBlocking blocking; ///< every field resolved (no zeros left to defaults but mlp_rows)
  int64_t batch = 0, length = 0;
  /// Which stack's hooks these are (hook_points.h): Blocks, or an encoder–decoder model's
  /// Encoder / Decoder / Cross (the decoder's cross-attention, its own Pass).
  HookStack stack = HookStack::Blocks;
  int64_t position_offset = 0;  ///< Δ: positions[0] (kept apart so no device read is needed)
  /// Gemma 4's per-layer inputs (ModelConfig::per_layer_input_width), else null.
  const PerLayerInputs* per_layer_inputs = nullptr;
  /// Keys and values handed between layers (ModelConfig::kv_source_layer), else null.
  SharedKeysValues* shared_kv = nullptr;

  bool wants(HookKind kind, int layer) const { return sink.wants({kind, layer, stack}); }
  /// Hands a whole per-position tensor to the sink if it wants it.
  void emit(HookKind kind, int layer, const at::Tensor& t) const {
    if (t.defined() && wants(kind, layer)) sink.tensor({kind, layer, stack}, t, 0);
  }
};

/// The projections one attention reads (self-attention's w_q…b_o, or a decoder layer's
/// cross-attention w_cq…w_co, which have no biases).
struct Projections {
  const at::Tensor &w_q, &b_q, &w_k, &b_k, &w_v, &b_v, &w_o, &b_o;
  const at::Tensor &q_norm, &k_norm;  ///< config.qk_norm's gains; undefined: none
  const at::Tensor& sinks;            ///< [n_heads] learned sink logits (gpt-oss); undefined: none
  /// Multi-head latent attention's (LayerWeights::w_q_a …); undefined for other models.
  const at::Tensor &w_q_a, &q_a_norm, &w_kv_a, &kv_a_norm, &w_kv_b;
};

/// A layer's queries, keys and values before any rotation: q, k [batch, pos, heads, d_head],
/// v [batch, pos, kv_heads, value_head_dim].
struct QueryKeyValue {
  at::Tensor q, k, v;
};

/// q (after config.qk_norm and the attention temperature), k (after qk_norm) and v (the keys'
/// projection with config.values_from_keys; after config.v_norm) of layer input `h` [batch,
/// pos, d_model]; keys and values from `kv_input` where defined (cross-attention); k and v
/// undefined for a layer that reuses another's (config.kv_source_layer ≥ 0). Multi-head latent attention (ModelConfig::latent_attention()) through its
/// latents: q = W_q·RMSNorm(W_q_a·h) (or W_q·h), [k_nope; v] = W_kv_b·RMSNorm(c) with [c; k_rope]
/// = W_kv_a·h, each head's channels reordered rotary first (model_config.h).
QueryKeyValue query_key_value(const ModelConfig& c, const Projections& w, const at::Tensor& h,
                              const at::Tensor& positions, const at::Tensor& kv_input = {});

/// config.qk_norm applied to a projection `x` [batch, pos, heads, d_head] with gain `weight`:
/// RMSNorm over d_head (PerHead) or over heads·d_head (Whole), as HF Qwen3RMSNorm /
/// Olmo2RMSNorm (float32, then scaled; Gemma's 1 + w through config.norm_weight_offset); L2
/// over d_head without a gain (Llama4TextL2Norm; `weight` unused). `x` itself when the model
/// has no q/k norm. `c` is the layer's config (ModelConfig::layer_config).
at::Tensor qk_norm(const ModelConfig& c, const at::Tensor& x, const at::Tensor& weight);
/// The queries `q` [batch, pos, heads, d_head] times the attention temperature of their
/// positions (int64 [pos]): 1 + s·ln(1 + floor((i + 1) / f)), s = c.attn_temperature_scale,
/// f = c.attn_temperature_floor (Llama 4's NoPE layers, HF Llama4TextAttention, in float32);
/// `q` itself when s is 0. hook_q shows the scaled queries.
at::Tensor query_temperature(const ModelConfig& c, const at::Tensor& q, const at::Tensor& positions);
Projections self_attention(const LayerWeights& w);
Projections cross_attention(const LayerWeights& w);

/// The decoder's cross-attention for one forward: its Pass (stack Cross, a bidirectional
/// config, no position encoding) and the encoder's output it reads its keys and values from.
struct Cross {
  const Pass& pass;
  at::Tensor memory;  ///< [batch, encoder pos, d_model]
};

/// RMSNorm (HF LlamaRMSNorm; Gemma's offset form) or LayerNorm (weight and/or bias may be
/// undefined: OLMo's non-parametric, MPT's bias-free) over the last dim, computed in float32
/// and returned in x's dtype; per config.norm and config.norm_eps.
at::Tensor norm(const ModelConfig& c, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias);
/// RMSNorm without a gain (Gemma 4's v_norm and router input; Llama 4's L2 q/k norm):
/// x·rsqrt(mean(x²) + eps) over the last dim in float32, returned in x's dtype.
at::Tensor unit_rms(const at::Tensor& x, double eps);

/// q, k or v of `h` [batch, pos, d_model]: linear(h, weight, bias) viewed as [batch, pos, heads,
/// d_head]; MPT clamps it to ±config.clip_qkv (its Wqkv output). Used by the forward and by
/// Transformer::qk_projections.
at::Tensor projection(const ModelConfig& c, const at::Tensor& h, const at::Tensor& weight, const at::Tensor& bias,
                      int64_t heads);

/// The activation function of `a` (tanh GELU for GeluNew, as HF `gelu_new` / BLOOM's).
at::Tensor activation(Activation a, const at::Tensor& x);

/// The gated MLP down(act(gate(x)) · up(x)) (+ biases where defined) of LayerWeights::w_gate,
/// w_up, w_down on `h` [..., d_model] (SwiGLU, GeGLU; an MoE layer's shared expert).
at::Tensor gated_mlp(const ModelConfig& c, const LayerWeights& w, const at::Tensor& h);

/// Token embeddings (+ token types) (+ the encoding's input term), then the embedding norm:
/// [batch, pos, d_model] in the model's dtype. Emits hook_embed, hook_pe_state, hook_pos_embed.
/// `token_types` int64 [batch, pos] or undefined (all type 0); ignored without type embeddings.
at::Tensor embedding(const Pass& p, const ModelWeights& w, const at::Tensor& ids, const at::Tensor& token_types);

/// The embedding norm of a model that has one (`embed_norm`: BLOOM's
/// word_embeddings_layernorm, BERT's embeddings.LayerNorm) applied to the embedding sum `x`
/// [batch, pos, d_model]; `x` itself otherwise. The one place this rule lives: the forward's
/// embedding and Transformer::qk_projections both call it.
at::Tensor embedding_norm(const ModelConfig& c, const ModelWeights& w, const at::Tensor& x);

/// hook_embed alone: token embeddings times config.embed_scale (rounded to the dtype first, as
/// HF Gemma's normalizer is), [batch, pos, d_model].
at::Tensor token_embedding(const ModelConfig& c, const ModelWeights& w, const at::Tensor& ids);

/// Layer `l`'s attention on its (already normed) input h [batch, pos, d_model]: q/k/v (clipped
/// for MPT; k and v from p.shared_kv for a layer that reuses another's, and kept there for the
/// layers that will), rotation, blocked attention handing its maps to the sink, output projection.
/// Returns hook_attn_out [batch, pos, d_model]; emits q, k, v, rot_q/k, the maps, z, attn_out.
/// `kv_input` (cross-attention): keys and values come from it, [batch, key pos, d_model],
/// instead of h.
at::Tensor attention(const Pass& p, int l, const Projections& w, const at::Tensor& h,
                     const at::Tensor& kv_input = {});

/// The MLP on its (already normed) input, over chunks of positions (kMlpChunkBytes): the
/// result equals one whole call, memory stays O(chunk · d_mlp). Emits hook_mlp_out.
at::Tensor mlp(const Pass& p, int l, const LayerWeights& w, const at::Tensor& h);

/// One layer by config.norm_placement / parallel_residual (model_config.h), resid_pre ->
/// the next layer's input. Hook names follow TransformerLens: post-norm blocks emit
/// hook_resid_mid = x + attn_out and hook_resid_post = norm1(resid_mid) + mlp_out, both before
/// their norms, as TL's BertBlock does; the block's output is norm2(resid_post). With `cross`
/// (a T5 decoder layer, pre-norm): x + self-attn, then + cross-attn(cross_norm(.), memory)
/// (hook_resid_mid_cross after it), then + MLP. Sandwich blocks then add the per-layer input
/// (p.per_layer_inputs; add_per_layer_input) and multiply by LayerWeights::layer_scalar where
/// defined (Gemma 4); hook_resid_post is the result.
at::Tensor layer(const Pass& p, int l, const LayerWeights& w, const at::Tensor& x, const Cross* cross = nullptr);

/// The final norm (if config.final_norm) and the masked-LM transform (if config.mlm_head):
/// the unembedding's input, emitted as ln_final.hook_normalized.
at::Tensor head_input(const Pass& p, const ModelWeights& w, const at::Tensor& x);

/// The norm that feeds layer `l`'s q and k from the residual stream: attn_norm for pre-norm
/// layers; for post-norm layers the embedding norm at layer 0 (it is the last norm the input
/// went through) and none (`present` false) after.
QkInputNorm attention_input_norm(const ModelConfig& c, const ModelWeights& w, int l);

}  // namespace poslens::blocks
