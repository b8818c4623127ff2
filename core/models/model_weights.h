#pragma once
// The weights of a transformer (decoder, encoder, or T5's two stacks) by role, in one
// convention whatever the checkpoint: linear weights are [out, in] (torch.nn.Linear), fused
// tensors already split, all on the model's device and compute dtype. Undefined tensors mean
// "absent" (e.g. no biases in Llama).
#include <map>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "core/position/components.h"

namespace poslens {

struct LayerWeights {
  at::Tensor attn_norm, attn_norm_bias;  ///< [d_model]; undefined: non-parametric LayerNorm (OLMo)
  at::Tensor w_q, b_q;                   ///< [n_heads*d_head, d_model], [n_heads*d_head]
  at::Tensor w_k, b_k;                   ///< [n_kv_heads*d_head, d_model], [n_kv_heads*d_head]
  at::Tensor w_v, b_v;                   ///< [n_kv_heads*d_head, d_model], [n_kv_heads*d_head]
  at::Tensor w_o, b_o;                   ///< [d_model, n_heads*value_head_dim], [d_model]
  /// config.qk_norm's RMSNorm gains: [d_head] each (PerHead), or [n_heads*d_head] and
  /// [n_kv_heads*d_head] (Whole); undefined without q/k norm.
  at::Tensor q_norm, k_norm;
  at::Tensor mlp_norm, mlp_norm_bias;    ///< [d_model]
  /// NormPlacement::Sandwich's norms on the sublayers' outputs (Gemma 2/3
  /// post_attention_layernorm, post_feedforward_layernorm), [d_model]; else undefined.
  at::Tensor attn_post_norm, mlp_post_norm;
  /// [d_mlp, d_model], [d_mlp] (gated MLP only; with config.shared_expert, an MoE layer's shared
  /// expert, as w_up and w_down)
  at::Tensor w_gate, b_gate;
  at::Tensor w_up, b_up;                 ///< [d_mlp, d_model], [d_mlp]
  at::Tensor w_down, b_down;             ///< [d_model, d_mlp], [d_model]
  /// config.attention_sinks: one sink logit per head, [n_heads]; else undefined.
  at::Tensor attn_sinks;
  /// MlpType::MoE (x @ W): router [n_experts, d_model], experts_gate_up [n_experts, d_model,
  /// 2·d_mlp], gate and up interleaved (gate the even columns, up the odd), experts_down [n_experts,
  /// d_mlp, d_model], both transposed views on 2.x's CPU (weight_table.cpp); the biases [n_experts],
  /// [n_experts, 2·d_mlp], [n_experts, d_model] where the family has them (gpt-oss), else undefined.
  at::Tensor router, router_bias, experts_gate_up, experts_gate_up_bias, experts_down, experts_down_bias;
  /// ExpertRouting::SigmoidBiased: added to σ(router logits) to choose the experts, not to
  /// weigh them (DeepSeek-V3's `e_score_correction_bias`), [n_experts]; else undefined.
  at::Tensor router_score_bias;
  /// ExpertRouting::ScaledSoftmaxAll (Gemma 4's router): the gain on its normed input
  /// [d_model] (`router.scale`) and each expert's weight factor [n_experts]
  /// (`router.per_expert_scale`); else undefined.
  at::Tensor router_scale, per_expert_scale;
  /// ModelConfig::experts_beside_mlp's norms, [d_model] each: on the shared expert's output
  /// (`post_feedforward_layernorm_1`), on the experts' input (`pre_feedforward_layernorm_2`) and
  /// on their output (`post_feedforward_layernorm_2`); else undefined.
  at::Tensor shared_expert_post_norm, experts_norm, experts_post_norm;
  /// Multi-head latent attention (ModelConfig::latent_attention(); HF DeepseekV2Attention), as
  /// stored: w_q_a [q_lora_rank, d_model] and q_a_norm [q_lora_rank] where q_lora_rank > 0 (w_q
  /// is then q_b_proj, [n_heads·d_head, q_lora_rank]; else q_proj); w_kv_a [kv_lora_rank +
  /// qk_rope_head_dim, d_model] (kv_a_proj_with_mqa: the latent's rows, then the shared rotary
  /// key's), kv_a_norm [kv_lora_rank], w_kv_b [n_heads·(d_head − qk_rope_head_dim +
  /// value_head_dim), kv_lora_rank] (per head its no-position key rows, then its value rows).
  /// w_q's rows per head are HF's order (no-position, then rotary); w_k and w_v stay undefined.
  at::Tensor w_q_a, q_a_norm, w_kv_a, kv_a_norm, w_kv_b;
  /// An encoder–decoder model's decoder layers: the cross-attention's norm and projections
  /// (q from the decoder, k and v from the encoder's output), shaped as w_q, w_k, w_v, w_o.
  at::Tensor cross_norm, cross_norm_bias, w_cq, w_ck, w_cv, w_co;
  /// Per-layer inputs (ModelConfig::per_layer_input_width P; Gemma 4's PLE): per_layer_gate
  /// [P, d_model] (`per_layer_input_gate`), per_layer_projection [d_model, P], per_layer_norm
  /// [d_model] (`post_per_layer_input_norm`); else undefined.
  at::Tensor per_layer_gate, per_layer_projection, per_layer_norm;
  /// ModelConfig::layer_scalar: [1], multiplies the layer's output; else undefined.
  at::Tensor layer_scalar;
};

struct ModelWeights {
  at::Tensor tok_embed;                     ///< [vocab, d_model]
  at::Tensor token_type_embed;              ///< [type_vocab_size, d_model] (BERT); else undefined
  at::Tensor embed_norm, embed_norm_bias;   ///< [d_model] (config.embed_norm)
  /// ModelConfig::per_layer_input_width P > 0 (Gemma 4's PLE): the table [per_layer_input_vocab,
  /// n_layers·P] (`embed_tokens_per_layer`), the projection of the scaled token embedding
  /// [n_layers·P, d_model] (`per_layer_model_projection`) and its RMSNorm's gain [P]
  /// (`per_layer_projection_norm`); else undefined.
  at::Tensor per_layer_embed, per_layer_model_projection, per_layer_projection_norm;
  std::vector<LayerWeights> layers;
  at::Tensor final_norm, final_norm_bias;   ///< [d_model]
  /// The masked-LM head transform (config.mlm_head): dense [d_model, d_model] + bias, then norm.
  at::Tensor head_dense, head_dense_bias, head_norm, head_norm_bias;
  at::Tensor unembed;                       ///< [vocab, d_model]; aliases tok_embed when tied
  at::Tensor unembed_bias;                  ///< [vocab]
  /// Position-encoding weights (docs/poslens-format.md): `pe.<name>` shared by all layers and
  /// `blocks.{L}.attn.pe.<name>` per layer (pe.layers has n_layers maps), shapes checked at load.
  PositionWeights pe;
  /// An encoder–decoder model's encoder: its layers (no cross-attention), final norm and
  /// position weights (T5: its own bucket table). Empty for other models.
  std::vector<LayerWeights> encoder_layers;
  at::Tensor encoder_final_norm, encoder_final_norm_bias;
  PositionWeights encoder_pe;
};

/// Number of parameters, counting a tied unembedding once.
int64_t parameter_count(const ModelWeights& w);

}  // namespace poslens
