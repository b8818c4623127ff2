#include "analysis/rope_probe.h"

#include <torch/torch.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <limits>
#include <random>

#include "analysis/rope_frequencies.h"
#include "core/base/error.h"
#include "core/runtime/resources.h"
#include "core/runtime/sinks.h"

namespace poslens {
namespace {

/// Memory one batch may use (activations of the forward plus the decomposition), in bytes.
constexpr int64_t kBatchBudget = int64_t{1} << 30;
constexpr int64_t kMaxBatch = 128;

int64_t auto_batch(const ModelConfig& c, int64_t T, int64_t C) {
  // Per sample: the forward's working memory (attention in blocks, no logits: resources.h), the
  // captured q and k of every layer, and the [head, C, T] component terms. No [T, T] map: the
  // last rows are all the probe keeps (LastRowSink).
  const int64_t bytes = forward_working_bytes(c, 1, T, torch::kFloat32) +
                        4 * T * c.n_layers * (c.n_heads + c.n_kv_heads) * c.d_head +
                        4 * 8 * c.n_heads * C * T;
  return std::clamp<int64_t>(kBatchBudget / std::max<int64_t>(bytes, 1), 1, kMaxBatch);
}

int64_t probe_bos(const LoadedModel& model, int64_t requested) {
  if (requested >= 0) return requested;
  if (model.tokenizer && model.tokenizer->bos_id() >= 0) return model.tokenizer->bos_id();
  if (model.model->config().bos_token_id >= 0) return model.model->config().bos_token_id;
  throw Error("the probe starts each sample with BOS, but this model has no BOS id (neither "
              "its tokenizer nor its config names one); give one explicitly (--bos ID)");
}

}  // namespace

int64_t training_length(const ModelConfig& config) {
  if (!config.training_json.empty()) {
    const auto j = nlohmann::json::parse(config.training_json, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("length") && j["length"].is_number_integer() &&
        j["length"].get<int64_t>() > 0)
      return j["length"].get<int64_t>();
  }
  return std::max<int64_t>(config.n_ctx, 0);
}

std::vector<int64_t> probe_tokens(const LoadedModel& model, int64_t samples, uint64_t seed) {
  if (samples < 0) throw Error("the probe's sample count must be positive (or 0 for all)");
  int64_t vocab = model.model->config().vocab_size;
  std::vector<int64_t> special;
  if (model.tokenizer) {
    vocab = std::min(vocab, model.tokenizer->vocab_size());
    special = model.tokenizer->special_ids();
  } else if (model.model->config().bos_token_id >= 0) {
    special = {model.model->config().bos_token_id};
  }
  std::vector<int64_t> candidates;
  for (int64_t id = 0; id < vocab; ++id)
    if (std::find(special.begin(), special.end(), id) == special.end()) candidates.push_back(id);
  if (candidates.empty()) throw Error("the vocabulary has no non-special token to probe with");
  if (samples == 0) return candidates;

  std::mt19937_64 rng(seed);
  std::shuffle(candidates.begin(), candidates.end(), rng);
  std::vector<int64_t> drawn(candidates.begin(),
                             candidates.begin() + std::min<int64_t>(samples, candidates.size()));
  std::uniform_int_distribution<size_t> any(0, candidates.size() - 1);
  while (static_cast<int64_t>(drawn.size()) < samples) drawn.push_back(candidates[any(rng)]);
  return drawn;
}

void compute_probe_vaf(ProbeResult& r) {
  const int64_t n_layers = r.scores.size(0), H = r.scores.size(1), C = r.components.size(2);
  if (C == 0) {
    r.vaf = torch::zeros({n_layers, 0});
    r.vaf_per_head = torch::zeros({n_layers, H, 0});
    return;
  }
  r.vaf = variance_accounted_for(r.scores.mean(1).unsqueeze(1), r.components.mean(1))
              .to(torch::kFloat);
  r.vaf_per_head =
      variance_accounted_for(r.scores.unsqueeze(2), r.components).to(torch::kFloat);
}

ProbeResult run_probe(const LoadedModel& loaded, const ProbeOptions& options,
                      const std::function<bool(int64_t, int64_t)>& progress) {
  c10::InferenceMode inference;
  const Transformer& model = *loaded.model;
  const ModelConfig& cfg = model.config();
  const PositionEncoding& pe = model.position_encoding();
  const int64_t T = options.length;
  if (T < 2) throw Error("the probe needs --length T of at least 2 (BOS and one token)");

  ProbeResult r;
  r.T = T;
  r.bos_id = probe_bos(loaded, options.bos_id);
  if (r.bos_id >= cfg.vocab_size)
    throw Error("BOS id " + std::to_string(r.bos_id) + " is outside the vocabulary");
  r.tokens = options.tokens.empty() ? probe_tokens(loaded, options.samples, options.seed)
                                    : options.tokens;
  for (int64_t id : r.tokens)
    if (id < 0 || id >= cfg.vocab_size)
      throw Error("probe token " + std::to_string(id) + " is outside the vocabulary");
  r.n_samples = static_cast<int64_t>(r.tokens.size());
  r.L = options.train_length > 0 ? options.train_length : training_length(cfg);

  const auto rotary = pe.rotary_info(T);
  const int64_t C = rotary ? rotary->rotary_dim / 2 : 0;
  if (rotary) {
    r.pairing = to_string(rotary->pairing);
    r.kept_components = rotary->kept_components;
    r.theta = effective_theta(*rotary);
  } else {
    r.theta = torch::zeros({0}, torch::kDouble);
  }
  r.activated = r.L > 0 ? activated_components(r.theta, r.L) : torch::zeros({C}, torch::kBool);
  const bool has_position = pe.has_position_scores();
  const bool has_remainder = rotary && rotary->rotary_dim < cfg.d_head;

  // Rotary models: q and k, split per component. Others: the logits themselves (so any term a
  // method adds, such as Transformer-XL's u·k, is in `scores`).
  // Per-position hooks whole; of the maps only the last query's row.
  const CaptureSpec qk_hooks(rotary ? std::vector<std::string>{"blocks.*.attn.hook_q", "blocks.*.attn.hook_k"}
                                    : std::vector<std::string>{});
  std::vector<std::string> row_hooks;
  if (!rotary) row_hooks.push_back("blocks.*.attn.hook_attn_scores");
  if (has_position) row_hooks.push_back("blocks.*.attn.hook_pos_scores");
  const int64_t batch = options.batch > 0 ? options.batch : auto_batch(cfg, T, C);

  const int64_t NL = cfg.n_layers, H = cfg.n_heads;
  const auto dev = model.device();
  const auto f64 = torch::dtype(torch::kDouble).device(dev);
  auto sum = torch::zeros({NL, H, T}, f64), sumsq = torch::zeros({NL, H, T}, f64);
  auto comp_sum = torch::zeros({NL, H, C, T}, f64);
  auto rem_sum = torch::zeros({NL, H, T}, f64), pos_sum = torch::zeros({NL, H, T}, f64);
  const auto key_positions = torch::arange(T, torch::kLong);
  const auto last_position = torch::full({1}, T - 1, torch::kLong);
  const double scale = cfg.attention_scale();

  for (int64_t start = 0; start < r.n_samples; start += batch) {
    const int64_t b = std::min(batch, r.n_samples - start);
    const auto repeated = torch::tensor(std::vector<int64_t>(r.tokens.begin() + start,
                                                             r.tokens.begin() + start + b),
                                        torch::kLong);
    auto ids = repeated.view({b, 1}).expand({b, T}).clone();
    ids.select(1, 0).fill_(r.bos_id);
    Captures caps;
    CaptureSink qk(qk_hooks, caps);
    LastRowSink last(CaptureSpec{row_hooks});
    SinkFanout sinks({&qk, &last});
    ForwardOptions forward;
    forward.logits = LogitsReturned::None;
    model.forward(ids, sinks, [&](int, int) { return !progress || progress(start, r.n_samples); }, forward);
    for (int l = 0; l < NL; ++l) {
      at::Tensor total;  // [b, H, T]
      if (rotary) {
        const auto q = caps.find({HookKind::Q, l}).to(dev);  // [b, T, H, dh]
        const auto k = caps.find({HookKind::K, l}).to(dev);  // [b, T, Hkv, dh]
        const auto q_last = q.slice(1, T - 1);               // [b, 1, H, dh]
        const auto parts =
            decompose_rotary_scores(q_last, k, last_position, key_positions, *rotary, scale);
        const auto comps = parts.components.squeeze(3);  // [b, H, C, T]
        comp_sum[l] += comps.sum(0).to(torch::kDouble);
        total = comps.sum(2);
        if (parts.remainder.defined()) {
          const auto rem = parts.remainder.squeeze(2);
          rem_sum[l] += rem.sum(0).to(torch::kDouble);
          total = total + rem;
        }
      } else {
        // Keys the query cannot see (a sliding window) are NaN, not −inf: the mean says so.
        const auto row = last.find({HookKind::AttnScores, l}).to(dev);
        total = row.masked_fill(row.isinf(), std::numeric_limits<float>::quiet_NaN());
      }
      if (has_position) {
        const auto pos = last.find({HookKind::PosScores, l}).to(dev);
        pos_sum[l] += pos.sum(0).to(torch::kDouble);
        if (rotary) total = total + pos;  // hook_attn_scores has it already
      }
      const auto td = total.to(torch::kDouble);
      sum[l] += td.sum(0);
      sumsq[l] += td.pow(2).sum(0);
    }
    if (progress && !progress(start + b, r.n_samples)) throw Cancelled();
  }

  const double n = static_cast<double>(r.n_samples);
  const auto mean = sum / n;
  r.scores = mean.to(torch::kCPU, torch::kFloat);
  r.scores_std = (sumsq / n - mean.pow(2)).clamp_min(0).sqrt().to(torch::kCPU, torch::kFloat);
  r.components = (comp_sum / n).to(torch::kCPU, torch::kFloat);
  if (has_remainder) r.remainder = (rem_sum / n).to(torch::kCPU, torch::kFloat);
  if (has_position) r.position_terms = (pos_sum / n).to(torch::kCPU, torch::kFloat);
  compute_probe_vaf(r);
  return r;
}

}  // namespace poslens
