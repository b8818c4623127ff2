#pragma once
// Internal to the runtime: the MlpType::MoE layer of blocks::mlp — routing each token to its
// top-k experts (ModelConfig::expert_routing: Mixtral / gpt-oss, Llama 4, DeepSeek-V2, -V3, Gemma 4) and
// running each expert on its own tokens only.
#include <ATen/core/Tensor.h>

#include "core/models/model_config.h"
#include "core/models/model_weights.h"

namespace poslens::blocks {

/// Each token's experts and their weights.
struct ExpertChoice {
  at::Tensor experts;  ///< int64 [tokens, n_experts_per_token]
  at::Tensor weights;  ///< [tokens, n_experts_per_token]: the model's dtype (Softmax,
                       ///< SigmoidOnInput, as HF computes them) or float32 (DeepSeek's)
};

/// The routing of tokens `x` [tokens, d_model] by c.expert_routing (model_config.h, each rule
/// with its source) from LayerWeights::router (+ router_bias, router_score_bias). The chosen set
/// is HF's; ties between equal scores may pick another expert of the same score.
ExpertChoice route_tokens(const ModelConfig& c, const LayerWeights& w, const at::Tensor& x);

/// MlpType::MoE on `h` [batch, pos, d_model] (HF GptOssMLP, MixtralSparseMoeBlock,
/// Llama4TextMoe, DeepseekV2Moe, DeepseekV3MoE, Gemma 4's Gemma4TextRouter + Gemma4TextExperts): route_tokens, then each chosen expert e gives
/// down_e(expert_activation(gate_e(x), up_e(x))) weighted on its output (on its input for
/// SigmoidOnInput), summed; a shared expert (ModelConfig::shared_expert, LayerWeights::w_gate,
/// w_up, w_down) adds its output for every token. With ModelConfig::experts_beside_mlp (Gemma
/// 4) `h` is the residual stream itself and the shared expert and the experts each read and
/// write it through their own norms (model_config.h). Returns [batch, pos, d_model] in h's dtype.
at::Tensor mixture_of_experts(const ModelConfig& c, const LayerWeights& w, const at::Tensor& h);

}  // namespace poslens::blocks
