#pragma once
// Per-dialect weight-name tables (docs/architecture.md "Models and training"): each rule maps one stored
// tensor name, with a {L} layer placeholder, to one or more weight roles. The loader checks
// every shape, converts dtype/device, splits fused tensors once, and fails on tensors that no
// rule used nor explicitly ignored.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include "core/models/model_config.h"
#include "core/models/model_weights.h"
#include "core/formats/tensor_source.h"

namespace poslens {

/// Where a rule's tensor goes: a per-layer role or a model-level role.
using LayerField = at::Tensor LayerWeights::*;
using ModelField = at::Tensor ModelWeights::*;

struct WeightRule {
  /// Stored name: "{L}" is replaced by the layer index. Mixtures of experts stored one tensor
  /// per expert: "{E}" runs over config.n_experts and the experts' tensors are stacked into
  /// [n_experts, ...] (Mixtral's `experts.{E}.w2.weight`); "{a,b}" names several tensors joined
  /// along dim 0 (`experts.{E}.{w1,w3}.weight`: each expert's gate rows, then its up rows).
  /// stored_shape is one stored tensor's; transpose / to_runtime see the stacked, joined one.
  std::string pattern;
  std::vector<int64_t> stored_shape; ///< shape as stored in the file
  std::vector<LayerField> layer_targets;  ///< per-layer roles (pattern has {L})
  ModelField model_target = nullptr;      ///< model-level role (pattern has no {L})
  bool transpose = false;  ///< stored [in, out] (GPT-2 Conv1D): transposed to [out, in]
  /// Any other stored layout: maps the stored tensor (already in the compute dtype) to the
  /// role's [out, in] layout (TransformerLens's per-head W_Q [n_heads, d_model, d_head]).
  /// Such rules are read-only: table_tensors refuses to write them back.
  at::Tensor (*to_runtime)(const at::Tensor& stored) = nullptr;
  bool optional = false;   ///< may be absent (e.g. lm_head.weight when tied)
  /// How a rule with several layer_targets hands its (transposed) tensor to them, along dim 0.
  enum class Split {
    Chunk,    ///< n consecutive parts: rows [q; k; v] (GPT-2 c_attn), equal or split_rows
    PerHead,  ///< rows laid out [split_heads, n, rows/(split_heads*n)], part i = [:, i, :]:
              ///< GPT-NeoX query_key_value, viewed per head as (q, k, v) by HF modeling_gpt_neox
    Shared,   ///< not split: every target gets the same tensor (Phi's one LayerNorm feeds both
              ///< attention and MLP); parameter_count counts it once
  };
  Split split = Split::Chunk;
  int64_t split_heads = 0;  ///< Split::PerHead: the number of heads in dim 0
  /// Split::Chunk: each part's rows, one per target (Phi-3's qkv_proj with grouped kv heads:
  /// [n_heads·d_head; n_kv_heads·d_head; n_kv_heads·d_head]); empty: equal parts.
  std::vector<int64_t> split_rows;
  /// An encoder–decoder model's encoder tensor: {L} runs over n_encoder_layers into
  /// ModelWeights::encoder_layers, pe_name goes to encoder_pe.
  bool encoder = false;
  /// Non-empty: the tensor goes to the `pe` map (ModelWeights::pe, or LayerWeights::pe when the
  /// pattern has {L}) under this name, instead of the targets above.
  std::string pe_name;
  /// The layers {L} runs over, ascending; empty: every layer. Rules of one MLP kind where the
  /// layers differ (Llama 4 Maverick: the experts' tensors on its MoE layers only, the dense
  /// MLP's on the others).
  std::vector<int64_t> only_layers;
};

struct WeightTable {
  std::vector<WeightRule> rules;
  std::vector<std::string> ignored;  ///< stored names (with {L}) that are known and not needed
};

/// Applies `table` to `source`: every non-optional rule's tensor must exist with exactly its
/// stored_shape; each is converted to `dtype` on `device` into memory of its own (never aliasing
/// the source, which may be closed afterwards). Throws poslens::Error:
///  - "missing tensor model.layers.3.mlp.up_proj.weight in model.safetensors"
///  - "expected [64, 64], got [64, 32] for model.layers.0.self_attn.q_proj.weight in ..."
///  - "unexpected tensors in ...: a.b, c.d (… and N more)" for names no rule used or ignored.
/// Leaves `unembed` undefined when its rule is optional and absent (the caller ties it).
/// Called with (tensors loaded, tensors to load); returning false cancels the load.
using LoadProgressFn = std::function<bool(int64_t done, int64_t total)>;

///
/// `progress` (optional) is called after each stored tensor; when it returns false the load
/// stops and throws poslens::Cancelled, keeping nothing.
ModelWeights load_weights(const TensorSource& source, const WeightTable& table,
                          const ModelConfig& config, c10::Device device, c10::ScalarType dtype,
                          const LoadProgressFn& progress = {});

/// The inverse of load_weights: every tensor `table` names, under its stored name and in its
/// stored layout (transposed back, fused parts joined), in rule order. Tensors that need no
/// layout change are the model's own (same storage: trainable parameters, see
/// named_parameters in poslens_writer.h); the others are new tensors. Optional rules whose
/// tensor is absent (an untied lm_head of a tied model) are skipped. Throws poslens::Error
/// naming the stored tensor when a required one is missing from `weights`.
std::vector<std::pair<std::string, at::Tensor>> table_tensors(const WeightTable& table,
                                                              const ModelConfig& config,
                                                              const ModelWeights& weights);

}  // namespace poslens
