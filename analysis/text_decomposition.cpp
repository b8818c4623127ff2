#include "analysis/text_decomposition.h"

#include <torch/torch.h>

#include "analysis/rope_frequencies.h"
#include "analysis/probe.h"
#include "core/base/error.h"
#include "core/runtime/resources.h"
#include "core/runtime/model_input.h"
#include "core/runtime/run.h"

namespace poslens {

TextDecomposition decompose_text(const LoadedModel& model, const std::vector<int64_t>& ids,
                                 int layer, int head, int64_t train_length) {
  require_one_stack(model, "The frequency decomposition");
  const auto& model_cfg = model.model->config();
  if (layer < 0 || layer >= model_cfg.n_layers)
    throw Error("layer " + std::to_string(layer) + " is out of range (the model has " +
                std::to_string(model_cfg.n_layers) + ")");
  // The layer's own window and encoding (Gemma 3's local and global bases, SmolLM3's NoPE layers).
  const auto& cfg = model.model->layer_config(layer);
  const auto& pe = model.model->position_encoding(layer);
  const int64_t T = static_cast<int64_t>(ids.size());
  const auto rotary = pe.rotary_info(T);
  if (!rotary)
    throw Error("the frequency decomposition needs a rotary model (RoPE, scaled RoPE, HoPE); " +
                (model.model->position_encoding().rotates()
                     ? "layer " + std::to_string(layer) + " is a " + model_cfg.layer_type(layer) + " layer: " + pe.describe()
                     : "this one uses " + pe.describe()));
  if (head < -1 || head >= cfg.n_heads)
    throw Error("head " + std::to_string(head) + " is out of range (the model has " +
                std::to_string(cfg.n_heads) + ")");

  // Not streamed yet: the layer's scores and every head's [component, q, k] terms (and their
  // masked copy) are held whole, 4·T²·heads·(2·C + 4) bytes (stories260K at 8192 tokens: 22.8 GB
  // measured). Refuse, with the numbers, what cannot fit instead of running out of memory.
  const int64_t C = rotary->rotary_dim / 2;
  check_resources("the frequency decomposition of layer " + std::to_string(layer) + " on " +
                      std::to_string(T) + " tokens",
                  "", 0, 4 * T * T * cfg.n_heads * (2 * C + 4));

  const std::string prefix = "blocks." + std::to_string(layer) + ".attn.";
  std::vector<std::string> hooks = {prefix + "hook_q", prefix + "hook_k", prefix + "hook_attn_scores"};
  if (pe.has_position_scores()) hooks.push_back(prefix + "hook_pos_scores");
  const auto run = run_model(model, ids, CaptureSpec(hooks));

  TextDecomposition out;
  out.layer = layer;
  out.head = head;
  out.L = train_length > 0 ? train_length : training_length(cfg);
  out.pairing = to_string(rotary->pairing);
  out.kept_components = rotary->kept_components;
  out.ids = run.ids;
  out.labels = run.labels;
  out.theta = effective_theta(*rotary);
  out.activated = out.L > 0 ? activated_components(out.theta, out.L)
                            : torch::zeros({out.theta.size(0)}, torch::kBool);

  c10::InferenceMode guard;
  const auto positions = torch::arange(T, torch::kLong);
  const auto parts = decompose_rotary_scores(run.captures.find({HookKind::Q, layer}),
                                             run.captures.find({HookKind::K, layer}), positions,
                                             positions, *rotary, cfg.attention_scale());
  const auto hidden = allowed_keys(cfg, T, torch::kCPU).logical_not();
  const auto pick = [&](const at::Tensor& t) {  // [1, head, ...] -> [head or 1, ...]
    return head < 0 ? t.select(0, 0) : t.select(0, 0).slice(0, head, head + 1);
  };
  out.components = pick(parts.components).masked_fill(hidden, 0.0).contiguous();
  if (parts.remainder.defined())
    out.remainder = pick(parts.remainder).masked_fill(hidden, 0.0).contiguous();
  if (const auto pos = run.captures.find({HookKind::PosScores, layer}); pos.defined())
    out.position_terms = pick(pos).contiguous();
  out.scores = pick(run.captures.find({HookKind::AttnScores, layer})).contiguous();
  return out;
}

}  // namespace poslens
