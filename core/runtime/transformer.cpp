#include "core/runtime/transformer.h"

#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <optional>

#include "core/base/error.h"
#include "core/base/narrow.h"
#include "core/runtime/blocks.h"
#include "core/runtime/massive_entries.h"

namespace poslens {

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
  for (int64_t l = 0; l < static_cast<int64_t>(config_.layer_schemes.size()); ++l) {
    layer_configs_.push_back(config_.layer_config(l));
    layer_positions_.push_back(
        make_components_encoding(layer_configs_.back().pe_components, layer_configs_.back().position_context(),
                                 weights_.pe));
  }
  if (config_.encoder_decoder()) {
    if (static_cast<int64_t>(weights_.encoder_layers.size()) != config_.n_encoder_layers)
      throw Error("model weights have " + std::to_string(weights_.encoder_layers.size()) +
                  " encoder layers, config " + std::to_string(config_.n_encoder_layers));
    encoder_position_ = make_components_encoding(config_.pe_components, config_.encoder_config().position_context(),
                                                 weights_.encoder_pe);
    no_position_ = make_components_encoding({}, config_.cross_attention_config().position_context(), {});
  }
}

const PositionEncoding& Transformer::position_encoding(int layer) const {
  if (layer < 0 || layer >= config_.n_layers)
    throw Error("layer " + std::to_string(layer) + " is out of range (the model has " + std::to_string(config_.n_layers) + ")");
  return layer_positions_.empty() ? *position_ : *layer_positions_[static_cast<size_t>(layer)];
}

const ModelConfig& Transformer::layer_config(int layer) const {
  if (layer < 0 || layer >= config_.n_layers)
    throw Error("layer " + std::to_string(layer) + " is out of range (the model has " + std::to_string(config_.n_layers) + ")");
  return layer_configs_.empty() ? config_ : layer_configs_[static_cast<size_t>(layer)];
}

c10::Device Transformer::device() const { return weights_.tok_embed.device(); }
c10::ScalarType Transformer::dtype() const { return weights_.tok_embed.scalar_type(); }

namespace {

/// What a massive entry of `x` [batch, pos, d_model] becomes under "massive=mean"
/// (ModelConfig::massive_means): its dimension's calibration mean, 0 where that is NaN,
/// broadcast to x's shape in x's dtype.
at::Tensor massive_values(const ModelConfig& c, const at::Tensor& x) {
  const auto means = torch::tensor(c.massive_means, torch::kDouble).nan_to_num(0.0);
  return means.to(x.device(), x.scalar_type()).expand(x.sizes());
}

/// The hook points of one stack of `n_layers` blocks, in forward order (`cross`: a decoder whose
/// layers have cross-attention after their self-attention). `stack_pe` is the stack's encoding,
/// `layer_pe(l)` layer l's (they differ with per-layer schemes).
template <class LayerEncoding>
void stack_points(std::vector<HookPoint>& points, HookStack stack, int64_t n_layers, const PositionEncoding& stack_pe,
                  const LayerEncoding& layer_pe, bool cross) {
  points.push_back({HookKind::Embed, -1, stack});
  if (stack_pe.has_pe_state()) points.push_back({HookKind::PeState, -1, stack});
  if (stack_pe.has_input_term()) points.push_back({HookKind::PosEmbed, -1, stack});
  for (int l = 0; l < n_layers; ++l) {
    const PositionEncoding& pe = layer_pe(l);
    for (auto kind : {HookKind::ResidPre, HookKind::Q, HookKind::K, HookKind::V}) points.push_back({kind, l, stack});
    if (pe.rotates()) {
      points.push_back({HookKind::RotQ, l, stack});
      points.push_back({HookKind::RotK, l, stack});
    }
    if (pe.has_position_scores()) points.push_back({HookKind::PosScores, l, stack});
    if (pe.has_cope()) {
      points.push_back({HookKind::CopeGates, l, stack});
      points.push_back({HookKind::CopePos, l, stack});
    }
    for (auto kind : {HookKind::AttnScores, HookKind::Pattern, HookKind::Z, HookKind::AttnOut, HookKind::ResidMid})
      points.push_back({kind, l, stack});
    if (cross)
      for (auto kind : {HookKind::Q, HookKind::K, HookKind::V, HookKind::AttnScores, HookKind::Pattern, HookKind::Z,
                        HookKind::AttnOut, HookKind::ResidMid})
        points.push_back({kind, l, HookStack::Cross});
    for (auto kind : {HookKind::MlpOut, HookKind::ResidPost}) points.push_back({kind, l, stack});
  }
  points.push_back({HookKind::LnFinal, -1, stack});
}

}  // namespace

std::vector<HookPoint> Transformer::hook_points() const {
  std::vector<HookPoint> points;
  if (config_.encoder_decoder()) {
    const auto encoder = [this](int) -> const PositionEncoding& { return *encoder_position_; };
    const auto decoder = [this](int) -> const PositionEncoding& { return *position_; };
    stack_points(points, HookStack::Encoder, config_.n_encoder_layers, *encoder_position_, encoder, false);
    stack_points(points, HookStack::Decoder, config_.n_layers, *position_, decoder, true);
  } else {
    const auto layer = [this](int l) -> const PositionEncoding& { return position_encoding(l); };
    stack_points(points, HookStack::Blocks, config_.n_layers, *position_, layer, false);
  }
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
  const int64_t B = ids.size(0), T = ids.size(1);
  at::Tensor token_types;
  if (options.token_type_ids.defined()) {
    const auto& types = options.token_type_ids;
    if (types.sizes() != tokens.sizes() || at::isFloatingType(types.scalar_type()))
      throw Error("token_type_ids must be integer ids shaped like the tokens [batch, pos]");
    if (!weights_.token_type_embed.defined())
      throw Error(c.architecture + " has no token-type embeddings (token_type_ids given)");
    if (types.device().is_cpu() && (types.min().item<int64_t>() < 0 || types.max().item<int64_t>() >= c.type_vocab_size))
      throw Error("token type ids must lie in [0, " + std::to_string(c.type_vocab_size) + ")");
    token_types = types.to(device(), torch::kLong);
  }
  const auto defaults = AttentionBlocking::from_environment();
  const auto& blocking = options.blocking;
  const AttentionBlocking block_sizes{blocking.query_rows ? blocking.query_rows : defaults.query_rows,
                                      blocking.key_chunk ? blocking.key_chunk : defaults.key_chunk,
                                      blocking.mlp_rows ? blocking.mlp_rows : defaults.mlp_rows};
  if (options.position_offset < 0) throw Error("the position offset must be ≥ 0, got " + std::to_string(options.position_offset));
  const int64_t offset = options.position_offset;
  // Learned tables check only the length (no device read of the positions): a shifted input
  // must fit the table too, asked here once (position_table throws past its end).
  if (offset > 0 && position_->has_input_term()) position_->position_table(offset + T);
  const auto positions = [&](int64_t n) {
    return torch::arange(offset, offset + n, torch::dtype(torch::kLong).device(device()));
  };

  if (!c.encoder_decoder()) {
    blocks::Pass pass{c, *position_, sink, positions(T), block_sizes, B, T, HookStack::Blocks, offset};
    sink.begin(B, T);
    auto x = blocks::embedding(pass, weights_, ids, token_types);
    // Gemma 4: per-layer inputs from the scaled token embedding; keys and values handed on.
    std::optional<PerLayerInputs> per_layer_inputs;
    if (c.per_layer_input_width > 0) pass.per_layer_inputs = &per_layer_inputs.emplace(c, weights_, ids, x);
    blocks::SharedKeysValues shared_kv;
    for (const auto& layer : layer_configs_)
      if (layer.kv_source_layer >= 0) shared_kv.sources.insert(layer.kv_source_layer);
    if (!shared_kv.sources.empty()) pass.shared_kv = &shared_kv;
    bool massive_ablated = false;  // ModelConfig::ablate_massive_activations: at the first layer that has them
    for (int l = 0; l < c.n_layers; ++l) {
      const auto& w = weights_.layers[static_cast<size_t>(l)];
      if (layer_configs_.empty()) {
        x = blocks::layer(pass, l, w, x);
      } else {  // this layer's window and encoding (Gemma 3 local/global, SmolLM3 NoPE layers)
        const blocks::Pass own{layer_config(l), position_encoding(l), sink,   pass.positions,
                               block_sizes,     B,                    T,      HookStack::Blocks,
                               offset,          pass.per_layer_inputs, pass.shared_kv};
        x = blocks::layer(own, l, w, x);
      }
      if (c.ablate_massive_activations && !massive_ablated) {
        const auto massive = massive_entries(x);
        if (massive.any().item<bool>()) {
          x = c.massive_means.empty() ? x.masked_fill(massive, 0.0) : torch::where(massive, massive_values(c, x), x);
          massive_ablated = true;
        }
      }
      sink.layer_done(l);
      if (progress && !progress(l + 1, static_cast<int>(c.n_layers))) throw Cancelled();
    }
    return unembed(blocks::head_input(pass, weights_, x), sink, options);
  }

  // Encoder–decoder (T5): `tokens` are the encoder's input; the decoder reads its own ids (or
  // starts from decoder_start_token_id) and the encoder's output through cross-attention.
  const auto decoder_ids = decoder_input(options.decoder_tokens, B);
  const int64_t Td = decoder_ids.size(1);
  const int total = static_cast<int>(c.n_encoder_layers + c.n_layers);
  sink.begin(B, Td);
  const auto encoder_config = c.encoder_config();
  const blocks::Pass encoder{encoder_config, *encoder_position_, sink, positions(T), block_sizes, B, T,
                             HookStack::Encoder, offset};
  auto memory = blocks::embedding(encoder, weights_, ids, {});
  for (int l = 0; l < c.n_encoder_layers; ++l) {
    memory = blocks::layer(encoder, l, weights_.encoder_layers[static_cast<size_t>(l)], memory);
    if (progress && !progress(l + 1, total)) throw Cancelled();
  }
  memory = blocks::norm(c, memory, weights_.encoder_final_norm, weights_.encoder_final_norm_bias);
  encoder.emit(HookKind::LnFinal, -1, memory);

  const auto cross_config = c.cross_attention_config();
  const blocks::Pass decoder{c, *position_, sink, positions(Td), block_sizes, B, Td, HookStack::Decoder, offset};
  const blocks::Pass cross_pass{cross_config, *no_position_, sink, positions(Td), block_sizes, B, Td,
                                HookStack::Cross, offset};
  const blocks::Cross cross{cross_pass, memory};
  auto x = blocks::embedding(decoder, weights_, decoder_ids, {});
  for (int l = 0; l < c.n_layers; ++l) {
    x = blocks::layer(decoder, l, weights_.layers[static_cast<size_t>(l)], x, &cross);
    sink.layer_done(l);
    if (progress && !progress(static_cast<int>(c.n_encoder_layers) + l + 1, total)) throw Cancelled();
  }
  return unembed(blocks::head_input(decoder, weights_, x), sink, options);
}

at::Tensor Transformer::decoder_input(const at::Tensor& given, int64_t batch) const {
  const auto& c = config_;
  if (!given.defined()) {
    if (c.decoder_start_token_id < 0) throw Error(c.architecture + " names no decoder_start_token_id: give decoder tokens");
    return torch::full({batch, 1}, c.decoder_start_token_id, torch::dtype(torch::kLong).device(device()));
  }
  if (given.dim() != 2 || given.size(0) != batch || given.size(1) < 1 || at::isFloatingType(given.scalar_type()))
    throw Error("decoder tokens must be integer ids [batch=" + std::to_string(batch) + ", pos >= 1]");
  if (given.device().is_cpu() && (given.min().item<int64_t>() < 0 || given.max().item<int64_t>() >= c.vocab_size))
    throw Error("a decoder token id is outside the vocabulary [0, " + std::to_string(c.vocab_size) + ")");
  return given.to(device(), torch::kLong);
}

at::Tensor Transformer::unembed(const at::Tensor& head_input, HookSink& sink, const ForwardOptions& options) const {
  const auto& c = config_;
  const int64_t B = head_input.size(0), T = head_input.size(1);
  const auto x = c.unembed_scale != 1.0 ? head_input * c.unembed_scale : head_input;
  const auto unembed = [&](int64_t p0, int64_t n) {
    const auto logits = at::linear(narrow_unless_whole(x, 1, p0, n), weights_.unembed, weights_.unembed_bias).to(torch::kFloat32);
    if (c.final_logit_softcap == 0.0) return logits;
    return torch::tanh(logits / c.final_logit_softcap) * c.final_logit_softcap;  // Gemma 2
  };
  at::Tensor logits;
  if (!sink.wants({HookKind::Logits, -1})) {
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
  return blocks::token_embedding(config_, weights_, tokens.to(device(), torch::kLong));
}

at::Tensor Transformer::qk_logits(int layer, const at::Tensor& x) const {
  const auto [q, k] = qk_projections(layer, x);
  return torch::matmul(q, k.transpose(-1, -2)) * config_.attention_scale();
}

QkInputNorm Transformer::attention_input_norm(int layer) const {
  return blocks::attention_input_norm(config_, weights_, layer);
}

std::pair<at::Tensor, at::Tensor> Transformer::qk_projections(int layer, const at::Tensor& x) const {
  if (layer < 0 || layer >= config_.n_layers)
    throw Error("layer " + std::to_string(layer) + " is out of range (the model has " +
                std::to_string(config_.n_layers) + ")");
  const auto& c = layer_config(layer);  // the layer's own q/k norm (Llama 4: none on NoPE layers)
  if (x.dim() != 3 || x.size(2) != c.d_model)
    throw Error("qk_logits: x must be [batch, pos, d_model=" + std::to_string(c.d_model) + "]");
  if (c.kv_source_layer >= 0)
    throw Error("layer " + std::to_string(layer) + " reuses the keys of layer " + std::to_string(c.kv_source_layer) +
                ", made from that layer's input: its q/k logits cannot be computed from its own input alone");
  const auto& w = weights_.layers[static_cast<size_t>(layer)];
  auto h = x.to(device(), dtype());
  // A pre-norm model with an embedding norm (BLOOM) puts both in front of layer 0's q/k.
  if (layer == 0 && c.norm_placement == NormPlacement::Pre) h = blocks::embedding_norm(c, weights_, h);
  const auto in = blocks::attention_input_norm(c, weights_, layer);
  if (in.present) h = blocks::norm(c, h, in.weight, in.bias);
  at::Tensor q, k;
  if (c.latent_attention()) {  // MLA (no temperature on these models): through its latents
    const auto qkv = blocks::query_key_value(c, blocks::self_attention(w), h, at::Tensor());
    q = qkv.q.transpose(1, 2);
    k = qkv.k.transpose(1, 2);
  } else {
    q = blocks::qk_norm(c, blocks::projection(c, h, w.w_q, w.b_q, c.n_heads), w.q_norm).transpose(1, 2);
    k = blocks::qk_norm(c, blocks::projection(c, h, w.w_k, w.b_k, c.n_kv_heads), w.k_norm).transpose(1, 2);
  }
  if (c.n_kv_heads != c.n_heads) k = k.repeat_interleave(c.n_heads / c.n_kv_heads, 1);
  return {q.to(torch::kFloat32), k.to(torch::kFloat32)};
}

}  // namespace poslens
