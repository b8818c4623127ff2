#pragma once
// Small PosLens-format models built in memory with every weight random, for tests that need a
// model but not a real checkpoint (no fixture, no file).
#include <torch/torch.h>

#include <string>

#include "core/models/poslens_model.h"
#include "core/runtime/transformer.h"

namespace poslens::test {

/// The config of a 2-layer, 4-head, d_model 16 model with `components` (a position_encoding
/// JSON list), `kv_heads` key/value heads, causal or not, vocabulary 30, n_ctx 64.
inline ModelConfig small_config(const std::string& components, int64_t kv_heads = 4, bool causal = true) {
  return poslens_config_from_text(
      R"({"model_type": "poslens", "d_model": 16, "n_layers": 2, "n_heads": 4, "n_kv_heads": )" +
          std::to_string(kv_heads) + R"(, "d_mlp": 24, "vocab_size": 30, "n_ctx": 64, "causal": )" +
          (causal ? "true" : "false") + R"(, "position_encoding": )" + components + "}",
      "test model");
}

/// Every weight drawn N(0, 0.5²) (the methods' reference initialisations leave some terms
/// zero, e.g. CoPE's pos_emb, which would hide mistakes).
inline Transformer random_model(const ModelConfig& config, uint64_t seed = 11) {
  auto weights = initialize_weights(config, seed);
  torch::manual_seed(seed);
  torch::NoGradGuard no_grad;
  for (auto& [name, t] : named_parameters(config, weights)) t.copy_(torch::randn_like(t) * 0.5);
  return Transformer(config, weights);
}

}  // namespace poslens::test
