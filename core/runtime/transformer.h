#pragma once
// The model runtime: a transformer (decoder-only, encoder-only or encoder–decoder) assembled
// from a ModelConfig and its weights,
// with attention computed explicitly (scores -> mask -> float32 softmax) in blocks of query
// rows (attention.h), and every hook point of docs/formulas.md §1 handed to a HookSink as it is made
// (hook_sink.h): nothing in a forward pass holds [head, T, T].
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "core/runtime/attention.h"
#include "core/runtime/capture_sink.h"
#include "core/runtime/hook_points.h"
#include "core/models/model_config.h"
#include "core/models/model_weights.h"
#include "core/position/position_encoding.h"

namespace poslens {

/// Called after each block with (blocks done, total blocks); return false to cancel, which
/// makes forward() throw poslens::Cancelled.
using ProgressFn = std::function<bool(int done, int total)>;

/// bool [T, T] on `device`: true where query i may attend to key j (causal: j <= i; sliding
/// window: i - j < sliding_window, |i - j| with window_both_sides; chunks: i and j in the same
/// attention_chunk_size chunk; otherwise every key; key 0 hidden from queries i > 0 with
/// mask_first_key).
at::Tensor allowed_keys(const ModelConfig& config, int64_t T, c10::Device device);

/// Which logits Transformer::forward returns; a sink that wants hook "logits" gets them all
/// either way, in chunks of positions.
enum class LogitsReturned {
  All,   ///< [batch, pos, vocab]
  Last,  ///< [batch, 1, vocab]: the next-token prediction (long inputs: O(vocab), not O(T·vocab))
  None,  ///< undefined
};

struct ForwardOptions {
  /// Zero fields take AttentionBlocking::from_environment(), then the memory budget.
  AttentionBlocking blocking;
  LogitsReturned logits = LogitsReturned::All;
  /// BERT-style segment ids, int64 [batch, pos] like the tokens, each < config.type_vocab_size;
  /// undefined: type 0 everywhere. Only for models with token-type embeddings.
  at::Tensor token_type_ids;
  /// An encoder–decoder model's decoder input, int64 [batch, pos >= 1] (the forward's `tokens`
  /// are the encoder's); undefined: [decoder_start_token_id]. The logits are the decoder's.
  at::Tensor decoder_tokens;
  /// Position offset Δ (the length-generalisation intervention, docs/analyses.md): every
  /// position index the encoding reads is p + Δ — absolute tables look up p + Δ, RoPE rotates by
  /// (p + Δ)·θ_c, additive terms get query i + Δ and key j + Δ (relative ones are unchanged,
  /// FIRE's normaliser max(i, L) is not). CoPE's contextual positions and the causal mask do not
  /// depend on indices. Δ ≥ 0; a learned table throws past its end.
  int64_t position_offset = 0;
};

/// The norm in front of a layer's q/k (Transformer::attention_input_norm).
struct QkInputNorm {
  at::Tensor weight, bias;  ///< [d_model] each; undefined when absent
  bool present = false;     ///< false: q/k read the residual stream as it is
};

class Transformer {
 public:
  /// `weights` must already be on the compute device and dtype (see checkpoint.h).
  /// Throws poslens::Error if the config is invalid or the position encoding lacks a weight.
  Transformer(ModelConfig config, ModelWeights weights);

  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  /// The position encoding (an encoder–decoder model's decoder's). For a model whose layers
  /// differ (ModelConfig::layer_schemes) the global layers' one; position_encoding(layer) is
  /// each layer's.
  const PositionEncoding& position_encoding() const { return *position_; }
  /// Layer `layer`'s position encoding (a NoPE layer's encodes nothing) and config
  /// (ModelConfig::layer_config: its sliding window and components): the model's own for a
  /// model without per-layer schemes. Throws poslens::Error for a layer out of range.
  const PositionEncoding& position_encoding(int layer) const;
  const ModelConfig& layer_config(int layer) const;
  /// An encoder–decoder model's encoder position encoding (bidirectional); else position_encoding().
  const PositionEncoding& encoder_position_encoding() const {
    return encoder_position_ ? *encoder_position_ : *position_;
  }
  c10::Device device() const;
  c10::ScalarType dtype() const;

  /// Every hook point this model produces, in forward order.
  std::vector<HookPoint> hook_points() const;

  /// Runs the model on `tokens` (int64 [batch, pos], ids < vocab_size, any device) and returns
  /// the logits options.logits asks for, float32 on the model's device. The layers are
  /// assembled from the shared blocks of blocks.h by the config's recipe (pre-norm, parallel,
  /// post-norm). An encoder–decoder model (T5) runs `tokens` through its encoder, then
  /// options.decoder_tokens through its decoder (cross-attending to the encoder's output); the
  /// logits, `progress` (encoder then decoder layers) and hook names (hook_points.h) follow. Every hook point
  /// `sink` wants is handed to it as it is made (per-position hooks whole, logits in chunks of
  /// positions, maps in blocks of whole rows); a layer whose maps nobody wants streams its keys
  /// (attention.h), so memory stays O(T · block) per layer. Differentiable:
  /// gradients reach every weight that requires grad (training); callers that only infer
  /// should hold a c10::InferenceMode guard (run_model, the CLI, the benchmarks do). Ids on the
  /// CPU are range checked; ids on an accelerator are not (no device synchronisation per call).
  /// Throws poslens::Error for a bad token tensor (shape, dtype, id out of range, empty),
  /// whatever the sink throws, and poslens::Cancelled when `progress` returns false.
  at::Tensor forward(const at::Tensor& tokens, HookSink& sink, const ProgressFn& progress = {},
                     const ForwardOptions& options = {}) const;
  /// The same keeping what `spec` wants whole in `captures` (if non-null): CaptureSink.
  at::Tensor forward(const at::Tensor& tokens, const CaptureSpec& spec = {},
                     Captures* captures = nullptr, const ProgressFn& progress = {}) const;

  /// hook_embed of `tokens` (int64 [batch, pos] on any device): the token embeddings after any
  /// model-specific scaling, [batch, pos, d_model] on the model's device and dtype. Ids are not
  /// checked (forward() checks them).
  at::Tensor embed(const at::Tensor& tokens) const;

  /// Layer `layer`'s content logits for a residual-stream input `x` (float [batch, pos,
  /// d_model], any values — e.g. the position embeddings alone): the norm in front of its
  /// attention (blocks::attention_input_norm; at layer 0 also the embedding norm of a model
  /// that has one: BERT's, BLOOM's), the q and k projections with their biases (clipped for
  /// MPT; RMS-normed for config.qk_norm models: Qwen3, OLMo 2), kv heads repeated, then scale·q·k; no rotation, no position terms, no mask. Float32 [batch, head, q_pos, k_pos] on the model's device. This is
  /// the absolute-PE position-only map of docs/formulas.md §3 (Golovneva et al. 2024 Fig. 4) before the softmax.
  /// Throws poslens::Error for a layer out of range, x of the wrong width, or a layer that
  /// reuses another's keys (ModelConfig::kv_source_layer: they come from that layer's input).
  at::Tensor qk_logits(int layer, const at::Tensor& x) const;
  /// The norm between the residual stream and layer `layer`'s q/k projections, as {weight,
  /// bias, present}: attn_norm for pre-norm models; for post-norm models (BERT) the embedding
  /// norm at layer 0 and none after. Throws std::out_of_range for a layer out of range.
  QkInputNorm attention_input_norm(int layer) const;
  /// The q and k of qk_logits, each float32 [batch, head, pos, d_head] on the model's device
  /// with kv heads repeated, so that scale·q·kᵀ of any block of them is that block of
  /// qk_logits. Throws as qk_logits.
  std::pair<at::Tensor, at::Tensor> qk_projections(int layer, const at::Tensor& x) const;

 private:
  /// The decoder ids of an encoder–decoder forward (checked), [batch, pos].
  at::Tensor decoder_input(const at::Tensor& given, int64_t batch) const;
  /// Logits of the head's input (sink's "logits" in chunks), what options.logits asks for.
  at::Tensor unembed(const at::Tensor& head_input, HookSink& sink, const ForwardOptions& options) const;

  ModelConfig config_;
  ModelWeights weights_;
  std::unique_ptr<PositionEncoding> position_;  ///< the decoder's for an encoder–decoder model
  std::unique_ptr<PositionEncoding> encoder_position_, no_position_;  ///< encoder; cross-attention
  /// Per-layer schemes only: each layer's config and encoding (n_layers each); empty otherwise.
  std::vector<ModelConfig> layer_configs_;
  std::vector<std::unique_ptr<PositionEncoding>> layer_positions_;
};

}  // namespace poslens
