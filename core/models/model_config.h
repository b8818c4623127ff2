#pragma once
// The shape and block choices of a transformer, read from a checkpoint: decoders (GPT-2,
// Llama, …), encoders (BERT, RoBERTa: `causal` false) and T5's encoder–decoder (a decoder stack
// with cross-attention beside the encoder).
// Names follow the field (TransformerLens / HF): d_model, n_heads, n_kv_heads, d_head, rope_theta.
#include <cstdint>
#include <string>
#include <vector>

#include "core/position/components.h"

namespace poslens {

enum class NormType { RMSNorm, LayerNorm };
/// Gated: down(act(gate(x)) * up(x)) (SwiGLU); Plain: down(act(up(x))); MoE: a mixture of
/// experts, each token routed to the top n_experts_per_token of n_experts (ModelConfig below).
enum class MlpType { Gated, Plain, MoE };
/// What each expert of an MlpType::MoE layer computes from its gate g and up u projections:
/// ClampedSwiGLU: (clamp(u, ±limit) + 1) · g'·σ(1.702·g'), g' = min(g, limit) (gpt-oss,
/// HF GptOssExperts); Gated: act(g) · u with ModelConfig::activation (Mixtral, HF MixtralExperts).
enum class ExpertActivation { ClampedSwiGLU, Gated };
enum class Activation { SiLU, GeluNew, GeluExact, ReLU };
/// Where a layer's norms sit (the block recipes of core/runtime/transformer.cpp):
/// Pre: x + attn(norm1(x)), then + mlp(norm2(.)) (GPT-2, Llama, BLOOM, MPT; parallel_residual
/// variant for NeoX/Phi). Post: norm1(x + attn(x)), then norm2(. + mlp(.)) (BERT, RoBERTa).
/// SublayerOutput: x + norm1(attn(x)), then + norm2(mlp(.)) — the norms on the sublayers'
/// outputs, none on their inputs (OLMo 2, Olmo2DecoderLayer). Sandwich: both, x +
/// post1(attn(norm1(x))), then + post2(mlp(norm2(.))) (Gemma 2/3, Gemma3DecoderLayer; the
/// post norms are LayerWeights::attn_post_norm / mlp_post_norm).
enum class NormPlacement { Pre, Post, SublayerOutput, Sandwich };
/// RMSNorm of q and k after their projections, before RoPE (config.norm_eps, weights
/// LayerWeights::q_norm / k_norm): PerHead over each head's d_head values (Qwen3, Gemma 3: HF
/// `q_norm`/`k_norm` of size head_dim); Whole over the whole projection, n_heads·d_head (OLMo 2);
/// L2 per head without a gain (Llama 4's Llama4TextL2Norm, x·rsqrt(mean(x²) + eps)). HF applies
/// Llama 4's after RoPE; a rotation keeps each pair's norm, so before it is the same.
enum class QkNorm { None, PerHead, Whole, L2 };
/// How an MlpType::MoE layer chooses and weighs its top-k experts:
/// - Softmax: the k largest router logits, softmax over those k on each expert's output
///   (Mixtral, gpt-oss).
/// - SigmoidOnInput: the k largest logits, σ(logit) multiplies each expert's *input* (Llama 4's
///   Llama4Router / Llama4TextMoe), the outputs summed unweighted.
/// - SoftmaxAll: p = softmax over all n_experts (float32); the k largest p, not renormalised,
///   times routed_scaling_factor (DeepSeek-V2, arXiv 2405.04434 §2.2; HF DeepseekV2TopkRouter;
///   with n_expert_groups > 1 its "group_limited_greedy": only the topk_expert_groups groups
///   with the largest best p compete).
/// - SigmoidBiased: s = σ(logit) (float32); experts chosen by s + LayerWeights::router_score_bias
///   among the topk_expert_groups groups with the largest sum of their two best (s + bias),
///   weighted by s, divided by the k's sum when norm_topk_prob, times routed_scaling_factor
///   (DeepSeek-V3, arXiv 2412.19437 §2.1.2, auxiliary-loss-free balancing; HF
///   DeepseekV3TopkRouter).
/// - ScaledSoftmaxAll: the router reads unit_rms(x)·LayerWeights::router_scale·d_model^−½ (its
///   own RMSNorm without a gain); p = softmax over all n_experts (float32); the k largest p
///   divided by their sum, each times LayerWeights::per_expert_scale (Gemma 4, HF
///   Gemma4TextRouter).
enum class ExpertRouting { Softmax, SigmoidOnInput, SoftmaxAll, SigmoidBiased, ScaledSoftmaxAll };

/// One layer's attention where the layers of a model differ (Gemma 3's local and global
/// layers, SmolLM3's and Cohere 2's NoPE layers, Llama 4's chunked RoPE and global NoPE
/// layers): its key window or chunk and its position encoding, and whether it takes the model's
/// q/k norm and attention temperature. Everything else about the layer is the model's.
struct LayerScheme {
  int64_t sliding_window = 0;  ///< 0: every key the mask allows; else keys with i − j < window
  /// The layer's position encoding as components; empty: NoPE (position only through the mask).
  std::vector<PositionComponentSpec> pe_components;
  /// > 0: chunked attention (ModelConfig::attention_chunk_size) with chunks of this many tokens.
  int64_t attention_chunk_size = 0;
  bool qk_norm = true;          ///< false: the layer leaves ModelConfig::qk_norm out (Llama 4 NoPE)
  bool attn_temperature = true; ///< false: the layer leaves ModelConfig::attn_temperature_scale out
  /// > 0: the layer's MLP is a dense gated MLP this wide (LayerWeights::w_gate, w_up, w_down)
  /// instead of the model's mixture of experts: Llama 4 Maverick's layers between its MoE layers
  /// (HF Llama4TextMLP with `intermediate_size_mlp`), DeepSeek's first `first_k_dense_replace`
  /// layers. 0: the model's MLP.
  int64_t dense_mlp_width = 0;
  /// > 0: the layer's head size and key/value head count where they differ from the model's
  /// (Gemma 4's global layers: `global_head_dim`, `num_global_key_value_heads`, HF
  /// per_layer_config); 0: the model's d_head / n_kv_heads. n_heads is every layer's.
  int64_t d_head = 0;
  int64_t n_kv_heads = 0;
  /// The layer's values are its keys' projection (ModelConfig::values_from_keys).
  bool values_from_keys = false;
  /// ≥ 0: the layer reuses that earlier layer's keys and values instead of projecting its own
  /// (ModelConfig::kv_source_layer); −1: its own.
  int64_t kv_source_layer = -1;
};

struct ModelConfig {
  std::string format;        ///< "llama2.c", "huggingface", ...
  std::string architecture;  ///< "llama2.c", "LlamaForCausalLM", "GPT2LMHeadModel", ...
  int64_t d_model = 0;
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t d_head = 0;
  int64_t d_mlp = 0;
  int64_t vocab_size = 0;
  int64_t n_ctx = 0;  ///< training context length L (max_position_embeddings / seq_len)

  NormType norm = NormType::RMSNorm;
  double norm_eps = 1e-5;
  MlpType mlp = MlpType::Gated;
  Activation activation = Activation::SiLU;

  /// The position encoding as components (position/components.h), in config order, whatever
  /// the format: HF and llama2.c readers translate their RoPE / learned-table settings into
  /// the same "rope" / "learned_absolute" components the PosLens format names. Empty: NoPE.
  std::vector<PositionComponentSpec> pe_components;

  bool qkv_bias = false;
  bool attn_out_bias = false;
  bool mlp_bias = false;
  bool tie_word_embeddings = false;
  int64_t sliding_window = 0;  ///< 0: full causal attention (Mistral: keys within the window)
  /// A bidirectional model's window reaches both ways: keys with |i − j| < sliding_window
  /// (ModernBERT's local layers, HF `local_attention` / 2 + 1). false: i − j < sliding_window
  /// only, as for causal models.
  bool window_both_sides = false;
  /// > 0: chunked attention (Llama 4's RoPE layers, HF `attention_chunk_size`, masking_utils
  /// chunked_overlay): query i sees key j ≤ i only when both lie in the same chunk,
  /// floor(i / c) = floor(j / c) — the first query of a chunk sees itself alone. 0: none.
  int64_t attention_chunk_size = 0;
  /// Attention temperature tuning (Llama 4's NoPE layers, HF `attn_temperature_tuning`; Meta
  /// 2025, after Nakanishi 2025, "Scalable-Softmax", arXiv 2501.19399): the query at absolute
  /// position i is multiplied by 1 + attn_temperature_scale · ln(1 + floor((i + 1) /
  /// attn_temperature_floor)) before the scores, sharpening far rows. 0: none.
  double attn_temperature_scale = 0.0;
  int64_t attn_temperature_floor = 1;
  bool causal = true;
  /// The first position hidden as a key from every later query (row 0 keeps it: it has no
  /// other): the intervention "mask-first-key" (analysis/interventions.h; Barbero et al. 2025,
  /// "Why do LLMs attend to the first token?", arXiv 2504.02732, remove the attention sink).
  /// Every mask — allowed_block(), the fused kernel's, the reference — applies it; encodings
  /// whose terms read the mask (CoPE's gates) see the key as absent. Never read from a checkpoint.
  bool mask_first_key = false;
  /// The massive-activation ablation (the intervention "massive=zero"; Sun et al. 2024,
  /// "Massive Activations in Large Language Models", arXiv 2402.17762, §3 set them to zero): at
  /// the first layer whose output has massive entries (core/runtime/massive_entries.h: |h| >
  /// 100 and > 1000 × the median |h|), those entries are set to 0 before the next layer reads
  /// them; later layers are left alone. That layer's hook_resid_post shows them as they were
  /// made; the next hook_resid_pre shows them ablated. Never read from a checkpoint.
  bool ablate_massive_activations = false;
  /// The other ablation of Sun et al. §3, "set them to their mean values" (the intervention
  /// "massive=mean:FILE"): with ablate_massive_activations, a massive entry in residual
  /// dimension d becomes massive_means[d] instead of 0 — d_model values, each the mean of d's
  /// massive entries over calibration sequences (`poslens-cli massive-activations --means`),
  /// NaN where d was never massive there (such entries still become 0). Empty: zero.
  std::vector<double> massive_means;
  /// Multiplies q·k before the softmax; 0 means the usual 1/sqrt(d_head) (T5-style models: 1).
  double attn_scale = 0.0;
  /// Logit soft-capping (Gemma 2, Gemma Team 2024 §2, arXiv 2408.00118): attention logits
  /// become c·tanh(s/c) after the scale and before the mask (attn_logit_softcap), the output
  /// logits likewise (final_logit_softcap); 0: none. SDPA cannot cap: capped layers keep the
  /// blocked attention path.
  double attn_logit_softcap = 0.0;
  double final_logit_softcap = 0.0;
  /// x + attn(norm1(x)) + mlp(norm2(x)) instead of two sequential residual steps (GPT-NeoX
  /// `use_parallel_residual`, Phi's parallel block, whose one norm is loaded as both norms).
  bool parallel_residual = false;
  NormPlacement norm_placement = NormPlacement::Pre;
  /// A LayerNorm on the embedding sum (token + position + token type) before the first layer:
  /// BLOOM `word_embeddings_layernorm`, BERT `embeddings.LayerNorm`.
  bool embed_norm = false;
  /// Token-type (segment) embeddings added to the input (BERT: 2); 0: none.
  int64_t type_vocab_size = 0;
  /// false: no norm between the last layer and the head (post-LN encoders end in one).
  bool final_norm = true;
  /// false: layer 0's attention reads the embedding norm's output with no norm of its own
  /// (ModernBERT: its first `attn_norm` is nn.Identity); pre-norm blocks only.
  bool first_attn_norm = true;
  /// The masked-LM head of BERT/RoBERTa before the unembedding: norm(act(dense(x))) with
  /// `activation`; the unembedding then predicts each (masked) position's own token.
  bool mlm_head = false;
  /// MPT `clip_qkv`: q, k, v are clamped to [-clip_qkv, clip_qkv] after their projections
  /// (before any rotation); 0: no clipping.
  double clip_qkv = 0.0;
  /// q/k normalisation (QkNorm above); None for the families before 2024.
  QkNorm qk_norm = QkNorm::None;
  /// A learned sink logit per head in every softmax (gpt-oss, OpenAI 2025, arXiv 2508.10925
  /// §2.1; the "off-by-one" softmax of Miller 2023): row i's weights are
  /// exp(s_ij) / (exp(sink_h) + Σ_j exp(s_ij)), so a row may give mass to no key. The logits
  /// are LayerWeights::attn_sinks; the missing mass 1 − Σ_j p_ij is the head's sink share.
  bool attention_sinks = false;
  /// MlpType::MoE (HF GptOssMLP, MixtralSparseMoeBlock): router logits r = W_r·h (+ b_r) over
  /// n_experts; the top n_experts_per_token by r, their weights softmax(r_top) (= Mixtral's
  /// softmax over all n_experts renormalised over the top k); each expert e gives
  /// down_e(expert_activation(gate_e(h), up_e(h))), d_mlp wide; the output is the weighted sum.
  /// Mixtral: Jiang et al. 2024, arXiv 2401.04088 §2.1; gpt-oss: arXiv 2508.10925 §2.1.
  int64_t n_experts = 0;
  int64_t n_experts_per_token = 0;
  ExpertActivation expert_activation = ExpertActivation::ClampedSwiGLU;
  double swiglu_limit = 7.0;  ///< ExpertActivation::ClampedSwiGLU's limit
  ExpertRouting expert_routing = ExpertRouting::Softmax;
  /// A dense gated MLP every token passes through beside its routed experts, its output added
  /// (Llama 4's `shared_expert`, d_mlp wide): LayerWeights::w_gate, w_up, w_down.
  bool shared_expert = false;
  /// DeepSeek's experts in groups (ExpertRouting::SoftmaxAll / SigmoidBiased): n_experts in
  /// n_expert_groups equal groups (HF `n_group`), experts chosen from the best
  /// topk_expert_groups (`topk_group`) only; 1, 1: no groups.
  int64_t n_expert_groups = 1;
  int64_t topk_expert_groups = 1;
  double routed_scaling_factor = 1.0;  ///< multiplies the routed experts' weights (DeepSeek)
  bool norm_topk_prob = false;         ///< SigmoidBiased: the k weights divided by their sum
  /// The shared expert's hidden width (DeepSeek: n_shared_experts · moe_intermediate_size);
  /// 0: d_mlp.
  int64_t shared_expert_width = 0;
  /// Gemma 4's MoE block (HF Gemma4TextDecoderLayer with `enable_moe_block`, gemma-4-26B-A4B),
  /// with NormPlacement::Sandwich and a shared expert (the dense MLP): both read the residual
  /// stream x itself, each through its own norms. The MLP sublayer's output is
  /// mlp_post_norm(shared_expert_post_norm(dense(mlp_norm(x))) +
  /// experts_post_norm(Σ_e w_e·expert_e(experts_norm(x)))), the experts routed from x
  /// (ExpertRouting::ScaledSoftmaxAll); LayerWeights names each norm.
  bool experts_beside_mlp = false;
  /// Multi-head latent attention, MLA (DeepSeek-V2, arXiv 2405.04434 §2.1; HF
  /// DeepseekV2Attention / DeepseekV3Attention), when kv_lora_rank > 0: keys and values come
  /// from a latent c = RMSNorm(W_kv_a·h) of kv_lora_rank values, per head [k_nope; v] = W_kv_b·c;
  /// the decoupled rotary key k_rope (qk_rope_head_dim values, also from W_kv_a) is one for
  /// every head. Queries are W_q·h, or W_q·RMSNorm(W_q_a·h) when q_lora_rank > 0 (the latent
  /// norms use eps 1e-6, as HF's). d_head = qk_rope_head_dim + qk_nope_head_dim; PosLens puts
  /// each head's rotary channels *first* (HF: last; the scores are the same sums), so the
  /// "rope" component with rotary_dim = qk_rope_head_dim rotates them and the RoPE analyses'
  /// unrotated remainder is the no-position channels (hook_q, hook_k show this order).
  /// n_kv_heads = n_heads: every head has its own key after W_kv_b.
  int64_t q_lora_rank = 0;
  int64_t kv_lora_rank = 0;
  int64_t qk_rope_head_dim = 0;
  /// The values' width per head where it differs from d_head (MLA's v_head_dim): hook_v,
  /// hook_z and the output projection's input are n_heads · value_head_dim() wide. 0: d_head.
  int64_t v_head_dim = 0;
  /// Per-layer attention schemes, n_layers of them (decoder-only models), or empty when every
  /// layer has the sliding_window and pe_components above. With schemes, sliding_window and
  /// pe_components above are the model's global layers' (what the embedding and the
  /// model-wide views read); each layer attends by its own scheme (layer_config).
  std::vector<LayerScheme> layer_schemes;
  /// > 0: an encoder–decoder model (T5) with this many encoder layers; n_layers counts the
  /// decoder's. The encoder is bidirectional, the decoder causal with cross-attention.
  int64_t n_encoder_layers = 0;
  /// The decoder's first input token of an encoder–decoder model (T5: the pad id 0).
  int64_t decoder_start_token_id = -1;
  /// The unembedding's input is multiplied by this (T5 with tied embeddings: d_model^-0.5).
  double unembed_scale = 1.0;
  /// Token embeddings are multiplied by this (Gemma: sqrt(d_model), in the compute dtype).
  double embed_scale = 1.0;
  /// RMSNorm multiplies by (norm_weight_offset + w), in float32 (Gemma stores w - 1: offset 1).
  double norm_weight_offset = 0.0;
  /// RMSNorm multiplies by its gain in float32 and then casts to the compute dtype, as HF
  /// Olmo2RMSNorm, GptOssRMSNorm and Gemma4RMSNorm do; false: the normed x is cast first and
  /// scaled in the compute dtype (HF LlamaRMSNorm). The two differ only below float32.
  bool norm_gain_in_float32 = false;
  int64_t bos_token_id = -1;  ///< -1: the model has no BOS token to prepend
  /// RMSNorm without a gain over each head's values before attention (Gemma 4's `v_norm`,
  /// Gemma4RMSNorm with_scale=False, eps norm_eps).
  bool v_norm = false;
  /// The values are the keys' projection W_k·h, taken before the q/k norm and the rotation
  /// (then v_norm), instead of W_v·h: Gemma 4's `attention_k_eq_v` on its global layers (HF
  /// Gemma4TextAttention with v_proj None). Set per layer (LayerScheme::values_from_keys).
  bool values_from_keys = false;
  /// ≥ 0: this layer's keys and values are layer kv_source_layer's, as that layer made them
  /// (after k_norm / v_norm, before the rotation, which is the same for both: same positions and
  /// encoding); the layer has no k/v projections of its own. Gemma 4's KV sharing
  /// (`num_kv_shared_layers`: each of the last layers reads the last earlier layer of its type,
  /// HF Gemma4TextAttention.is_kv_shared_layer). Set per layer (LayerScheme::kv_source_layer).
  int64_t kv_source_layer = -1;
  /// > 0: per-layer inputs, Gemma 4's PLE (HF Gemma4TextModel.get_per_layer_inputs /
  /// project_per_layer_inputs, Gemma4TextDecoderLayer): for layer l a vector of this many values
  /// per token, e_l = (RMSNorm(W_proj,l · x₀ / √d_model) + E_l[id] · √P) / √2 from the scaled token
  /// embedding x₀ and a table E (per_layer_input_vocab rows, n_layers · P columns); after the MLP
  /// the layer adds RMSNorm(W_up · (gelu(W_gate · x) ⊙ e_l)) to its output. 0: none.
  int64_t per_layer_input_width = 0;
  int64_t per_layer_input_vocab = 0;
  /// Each layer's output (residual included) is multiplied by its stored scalar
  /// (LayerWeights::layer_scalar; Gemma 4's `layer_scalar` buffer).
  bool layer_scalar = false;
  /// PosLens format only: the config's "training" object as JSON text (task, step, seed, loss,
  /// written by `poslens-cli train`, docs/training.md), empty when absent. Not used by the
  /// forward pass; kept so a checkpoint says how it was made.
  std::string training_json;
  /// The interventions this config runs with (Interventions::describe(), "p-RoPE 0.25, L3H1 τ 2"),
  /// empty for the checkpoint as stored. Set by intervened_model(); to_json() writes it as
  /// "interventions" and every file records it (ExportMetadata::interventions).
  std::string interventions;

  /// Throws poslens::Error naming the first inconsistent field (e.g. n_heads not divisible by
  /// n_kv_heads, d_head odd with rotary, a non-positive size).
  void validate() const;
  /// What position-encoding recipes need: d_model, n_heads, d_head, n_layers, n_ctx, causal.
  PositionContext position_context() const;
  /// attn_scale, or 1/sqrt(d_head) when it is 0.
  double attention_scale() const;
  /// True for a causal language model (next-token prediction); false for a bidirectional
  /// encoder (masked-LM: the logits at a position predict that position's own token).
  bool predicts_next_token() const { return causal && !mlm_head; }
  bool encoder_decoder() const { return n_encoder_layers > 0; }
  /// The encoder stack's config of an encoder–decoder model: n_encoder_layers layers,
  /// bidirectional. (Itself for other models.)
  ModelConfig encoder_config() const;
  /// What the decoder's cross-attention runs with: bidirectional over the encoder's keys, no
  /// sliding window.
  ModelConfig cross_attention_config() const;
  /// Layer `l`'s config: this one with the layer's sliding_window, attention_chunk_size,
  /// pe_components, d_head, n_kv_heads, values_from_keys and kv_source_layer, without the q/k
  /// norm or temperature the layer leaves out (and no layer_schemes); this one itself for a
  /// model without schemes. Throws std::out_of_range
  /// for l outside [0, layer_schemes.size()) when there are schemes.
  ModelConfig layer_config(int64_t l) const;
  /// Layer `l`'s type as the views label it: "NoPE" (no position encoding on a model that has
  /// one elsewhere), "local 4096" (a sliding window of 4096 keys), "local ±64" (a window both
  /// ways: |i − j| ≤ 64), "chunked 8192" (chunks of 8192 tokens) or "global".
  std::string layer_type(int64_t l) const;
  /// v_head_dim, or d_head when it is 0.
  int64_t value_head_dim() const { return v_head_dim > 0 ? v_head_dim : d_head; }
  /// True for multi-head latent attention (kv_lora_rank > 0).
  bool latent_attention() const { return kv_lora_rank > 0; }
  /// Layer `l`'s dense MLP width where it replaces the model's mixture of experts
  /// (LayerScheme::dense_mlp_width: Llama 4 Maverick's layers between its MoE layers,
  /// DeepSeek's first_k_dense_replace layers), else 0. Throws std::out_of_range for l outside
  /// [0, layer_schemes.size()) when there are schemes.
  int64_t dense_mlp_width(int64_t l) const;
  /// The widest MLP hidden activation of any layer: d_mlp, a wider shared expert or a wider
  /// dense layer.
  int64_t widest_mlp() const;
  /// The largest d_head / n_kv_heads of any layer (Gemma 4's global layers are wider).
  int64_t widest_head() const;
  int64_t most_kv_heads() const;
  /// True when some layer's d_head or n_kv_heads differs from the model's: hook_q … hook_z then
  /// change width between layers.
  bool per_layer_head_sizes() const;
  /// True when the layers differ (layer_schemes non-empty).
  bool per_layer_schemes() const { return !layer_schemes.empty(); }
  /// The whole config as a JSON object string (written into HDF5 attributes and shown by info);
  /// for a PosLens-format model its config.json, which loads again.
  std::string to_json() const;
};

const char* to_string(NormType);
const char* to_string(MlpType);
const char* to_string(QkNorm);
const char* to_string(ExpertRouting);
const char* to_string(Activation);
const char* to_string(NormPlacement);
/// The layer types of `c` with their layers, as `info` prints them: "local 512: 0-4, 6-10;
/// global: 5, 11" (runs of consecutive layers joined); empty for a model without schemes.
std::string layer_types_summary(const ModelConfig& c);

}  // namespace poslens
