#include "core/runtime/attention.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/base/narrow.h"
#include "core/base/shape_text.h"
#include "core/runtime/device_memory.h"
#include "core/runtime/kv_heads.h"

namespace poslens {

/// The masked logits of one block and what made them.
struct LayerAttention::Scores {
  int64_t q0 = 0, q1 = 0, k0 = 0, k1 = 0;
  AttentionInputs in;  ///< what the encoding's terms were given (positions always set)
  ScoreTerms terms;
  at::Tensor allowed;  ///< bool [rows, keys]; defined when asked for or when terms were added
  at::Tensor logits;   ///< float32 [B, H, rows, keys], masked entries −inf
};

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
/// Upper bound on rows per block of whole rows: smaller blocks skip more of the causal
/// triangle; larger ones make fewer, larger matrix products (bench/bench_forward.cpp). A GPU
/// wants far larger blocks: each op costs a launch, whatever its size.
constexpr int64_t kMaxBlockRows = 256;
constexpr int64_t kMaxCudaBlockRows = 4096;
/// Rows per block of the streamed path (CPU, CUDA).
constexpr int64_t kStreamRows = 128;
constexpr int64_t kCudaStreamRows = 2048;

at::Tensor positions(int64_t begin, int64_t end, c10::Device device) {
  return torch::arange(begin, end, torch::dtype(torch::kLong).device(device));
}

/// What a sliding window compares with its size: i − j, or |i − j| for a window both ways.
bool both_ways(const ModelConfig& c) { return c.window_both_sides && !c.causal; }
/// true where i and j lie in the same chunk of c.attention_chunk_size (Llama 4's chunked layers).
at::Tensor same_chunk(const ModelConfig& c, const at::Tensor& i, const at::Tensor& j) {
  const int64_t C = c.attention_chunk_size;
  return torch::div(i, C, "floor") == torch::div(j, C, "floor");
}
/// The first index of the chunk holding index i; 0 without chunks.
int64_t chunk_begin(const ModelConfig& c, int64_t i) {
  return c.attention_chunk_size > 0 ? i / c.attention_chunk_size * c.attention_chunk_size : 0;
}
at::Tensor window_distance(const ModelConfig& c, const at::Tensor& i_minus_j) {
  return both_ways(c) ? i_minus_j.abs() : i_minus_j;
}

void check_kv(const at::Tensor& t, const char* name, int64_t B, int64_t Hkv, int64_t T, int64_t dh) {
  if (t.dim() != 4 || t.size(0) != B || t.size(1) != Hkv || t.size(2) != T || t.size(3) != dh)
    throw Error(std::string("attention: ") + name + " must be [" + std::to_string(B) + ", " +
                std::to_string(Hkv) + ", " + std::to_string(T) + ", " + std::to_string(dh) +
                "], got " + shape_str(t));
}

/// A layer's output [B, T, H, dv] assembled from blocks of rows ([B, H, rows, dv] each): copied
/// into one tensor made up front, so no block's result is left between the next block's
/// temporaries on the heap; concatenated at the end where autograd records the layer.
class RowsOutput {
 public:
  RowsOutput(const at::Tensor& q, int64_t T, int64_t dv, bool differentiable) : differentiable_(differentiable) {
    if (!differentiable_) out_ = torch::empty({q.size(0), T, q.size(1), dv}, q.options());
  }
  void add(int64_t q0, const at::Tensor& z) {
    if (differentiable_) parts_.push_back(z.transpose(1, 2));
    else out_.narrow(1, q0, z.size(2)).copy_(z.transpose(1, 2));
  }
  at::Tensor take() {
    if (!differentiable_) return out_;
    return parts_.size() == 1 ? parts_.front().contiguous() : torch::cat(parts_, 1);
  }

 private:
  bool differentiable_;
  at::Tensor out_;
  std::vector<at::Tensor> parts_;
};

/// The encoding's terms and the mask as one float32 bias for the fused kernel, [B or 1, H or 1,
/// rows, keys]: position + content terms, −inf where a key is hidden.
at::Tensor terms_bias(const ScoreTerms& terms, const at::Tensor& allowed) {
  at::Tensor bias = terms.position;
  ScoreTerms::add(bias, terms.content);
  if (!bias.defined())
    bias = torch::zeros({1, 1, allowed.size(0), allowed.size(1)},
                        torch::dtype(torch::kFloat32).device(allowed.device()));
  return bias.masked_fill(allowed.logical_not(), kNegInf);
}

/// How the fused kernel masks rows [q0, q1) against keys [k0, k1) of a layer without additive
/// terms: its own causal flag for the whole of a causal layer, else the allowed mask where some
/// key is hidden (causal, a sliding window, the first key masked), else nothing.
struct KernelMask {
  bool causal = false;
  bool needs_allowed = false;
};
KernelMask kernel_mask(const ModelConfig& c, int64_t q0, int64_t q1, int64_t k0, int64_t k1) {
  const bool first_key_hidden = c.mask_first_key && k0 == 0 && q1 > 1;
  const bool whole_causal = c.causal && c.sliding_window == 0 && c.attention_chunk_size == 0 && !first_key_hidden &&
                            q0 == 0 && k0 == 0 && k1 == q1;
  return {whole_causal, !whole_causal && (c.causal || c.sliding_window > 0 || c.attention_chunk_size > 0 ||
                                          first_key_hidden)};
}

}  // namespace

at::Tensor allowed_block(const ModelConfig& config, int64_t q0, int64_t q1, int64_t k0, int64_t k1,
                         c10::Device device) {
  const auto i = positions(q0, q1, device).unsqueeze(1), j = positions(k0, k1, device).unsqueeze(0);
  auto a = config.causal ? j <= i : torch::ones({q1 - q0, k1 - k0}, torch::dtype(torch::kBool).device(device));
  if (config.sliding_window > 0) a = a & (window_distance(config, i - j) < config.sliding_window);
  if (config.attention_chunk_size > 0) a = a & same_chunk(config, i, j);
  if (config.mask_first_key && k0 == 0) a = a & ((j != 0) | (i == 0));  // row 0 keeps its only key
  return a;
}

int64_t attention_block_bytes(c10::Device device) {
  const auto memory = device_memory(device);
  if (!memory) return kAttentionBlockBytes;
  return std::clamp<int64_t>(memory->free_bytes / kCudaBlockShare, kAttentionBlockBytes, int64_t{2} << 30);
}

AttentionBlocking AttentionBlocking::from_environment() {
  static const AttentionBlocking parsed = [] {
    AttentionBlocking b;
    const char* text = std::getenv("POSLENS_ATTENTION_BLOCKS");
    if (!text || !*text) return b;
    long long rows = 0, keys = 0;
    char rest = 0;
    if (std::sscanf(text, "%lld,%lld%c", &rows, &keys, &rest) != 2 || rows < 1 || keys < 1)
      throw Error(std::string("POSLENS_ATTENTION_BLOCKS must be ROWS,KEYS (e.g. 3,5), got \"") +
                  text + "\"");
    b.query_rows = rows;
    b.key_chunk = keys;
    b.mlp_rows = rows;
    return b;
  }();
  return parsed;
}

LayerAttention::LayerAttention(const ModelConfig& config, const PositionEncoding& encoding,
                               const LayerAttentionInputs& in, int64_t head_begin,
                               int64_t head_count)
    : config_(config), encoding_(encoding), layer_(in.layer), offset_(in.position_offset) {
  const int64_t H = config.n_heads, Hkv = config.n_kv_heads, dh = config.d_head;
  if (!in.q.defined() || in.q.dim() != 4 || in.q.size(1) != H || in.q.size(3) != dh ||
      in.q.size(2) < 1)
    throw Error("attention: q must be [batch, " + std::to_string(H) + ", pos >= 1, " +
                std::to_string(dh) + "], got " + shape_str(in.q));
  B_ = in.q.size(0);
  T_ = in.q.size(2);
  d_head_ = dh;
  d_value_ = config.value_head_dim();
  if (!in.k.defined()) throw Error("attention: k is missing");
  // Cross-attention (T5's decoder) reads keys of another length; self-attention its own.
  K_ = in.k.dim() == 4 ? in.k.size(2) : 0;
  if (config.causal && K_ != T_)
    throw Error("attention: causal attention needs as many keys as queries (" + std::to_string(T_) + ")");
  check_kv(in.k, "k", B_, Hkv, K_, dh);
  if (in.v.defined()) check_kv(in.v, "v", B_, Hkv, K_, d_value_);
  if (head_count < 0) head_count = H - head_begin;
  if (head_begin < 0 || head_count < 1 || head_begin + head_count > H)
    throw Error("attention: heads [" + std::to_string(head_begin) + ", " +
                std::to_string(head_begin + head_count) + ") are outside the model's " +
                std::to_string(H));
  head_begin_ = head_begin;
  n_heads_ = head_count;
  const int64_t G = H / Hkv;
  q_ = narrow_unless_whole(in.q, 1, head_begin, head_count).contiguous();
  // Whole kv groups keep the grouped product (no repeated k/v); a range that splits a group
  // (one head of a GQA model, say) reads one kv head per query head.
  const bool whole_groups = head_begin % G == 0 && head_count % G == 0;
  const auto kv_heads = [&](const at::Tensor& t) {
    if (whole_groups) return narrow_unless_whole(t, 1, head_begin / G, head_count / G).contiguous();
    const auto index = torch::div(positions(head_begin, head_begin + head_count, t.device()), G,
                                  "floor");
    return t.index_select(1, index).contiguous();
  };
  k_ = kv_heads(in.k);
  if (in.v.defined()) v_ = kv_heads(in.v);
  n_kv_ = k_.size(1);
  group_ = n_heads_ / n_kv_;
  h_ = in.h;
  scale_ = config.attention_scale();
  terms_ = encoding.has_position_scores();
  value_term_ = encoding.has_value_term();
  if (encoding.scores_read_block_input() && !h_.defined())
    throw Error("attention: this position encoding's scores read the block input (h), which was "
                "not kept");
  if (encoding.scores_read_values() && !v_.defined())
    throw Error("attention: this position encoding's scores read the values, which were not kept");
  // The lse reads no values (Shaw's value term changes z only): any layer but CoPE's.
  softcap_ = config.attn_logit_softcap;
  if (in.sinks.defined()) {
    if (in.sinks.dim() != 1 || in.sinks.size(0) != H)
      throw Error("attention: sinks must be [" + std::to_string(H) + "], got " + shape_str(in.sinks));
    sinks_ = in.sinks.narrow(0, head_begin, head_count).to(torch::kFloat32).view({1, head_count, 1});
  }
  // SDPA can neither soft-cap its logits (Gemma 2) nor add a sink to its normaliser
  // (gpt-oss): such layers keep the blocked path.
  const bool kernel_softmax = softcap_ == 0.0 && !sinks_.defined();
  fused_lse_ = fused_attention_enabled() && fused_lse_built() && !encoding.needs_whole_rows() && kernel_softmax;
  fused_ = fused_attention_enabled() && !encoding.needs_whole_rows() && v_.defined() && !value_term_ &&
           kernel_softmax;
  block_bytes_ = attention_block_bytes(q_.device());
  max_block_rows_ = q_.is_cuda() ? kMaxCudaBlockRows : kMaxBlockRows;
}

bool LayerAttention::fused(const AttentionBlocking& blocking) const {
  return fused_ && !records_gradients() && blocking.query_rows == 0 && blocking.key_chunk == 0;
}

bool LayerAttention::records_gradients() const {
  return at::GradMode::is_enabled() && (q_.requires_grad() || k_.requires_grad() || v_.requires_grad() ||
                                        (h_.defined() && h_.requires_grad()));
}

std::pair<int64_t, int64_t> LayerAttention::key_range(int64_t q_begin, int64_t q_end) const {
  const int64_t W = config_.sliding_window;
  const int64_t last = config_.causal ? q_end : W > 0 && both_ways(config_) ? std::min(K_, q_end + W - 1) : K_;
  return {W > 0 ? std::max<int64_t>(0, q_begin - W + 1) : chunk_begin(config_, q_begin), last};
}

int64_t LayerAttention::block_rows(const AttentionBlocking& blocking) const {
  if (blocking.query_rows > 0) return blocking.query_rows;
  const int64_t W = config_.sliding_window, C = config_.attention_chunk_size;
  const int64_t widest = W > 0   ? std::min(K_, (both_ways(config_) ? 2 * W : W) + max_block_rows_)
                         : C > 0 ? std::min(K_, C + max_block_rows_)
                                 : K_;
  const int64_t per_row = B_ * n_heads_ * widest * 4;
  return std::clamp<int64_t>(block_bytes_ / std::max<int64_t>(per_row, 1), 1, max_block_rows_);
}

AttentionInputs LayerAttention::block_inputs(int64_t q0, int64_t q1, int64_t k0, int64_t k1,
                                             bool with_tensors) const {
  AttentionInputs in;
  const auto device = q_.device();
  in.layer = layer_;
  in.head_begin = head_begin_;
  in.q_pos = positions(q0 + offset_, q1 + offset_, device);
  in.k_pos = positions(k0 + offset_, k1 + offset_, device);
  in.q_begin = q0;
  in.k_begin = k0;
  in.length = T_;
  in.scale = scale_;
  in.causal = config_.causal;
  in.cache = &cache_;
  if (!with_tensors) return in;
  in.h = h_;
  in.q = narrow_unless_whole(q_, 2, q0, q1 - q0);
  in.k = to_query_heads(narrow_unless_whole(k_, 2, k0, k1 - k0), group_);
  if (v_.defined()) in.v = to_query_heads(narrow_unless_whole(v_, 2, k0, k1 - k0), group_);
  return in;
}

LayerAttention::Scores LayerAttention::block_scores(int64_t q0, int64_t q1, int64_t k0, int64_t k1,
                                                     bool need_allowed) const {
  Scores s;
  s.q0 = q0, s.q1 = q1, s.k0 = k0, s.k1 = k1;
  const int64_t R = q1 - q0, K = k1 - k0;
  const auto device = q_.device();
  const auto qb = narrow_unless_whole(q_, 2, q0, R);  // [B, H, R, dh]
  const auto kb = narrow_unless_whole(k_, 2, k0, K);  // [B, Hkv, K, dh]
  const bool f32 = q_.scalar_type() == torch::kFloat32;
  // Float32: scale q (O(R·dh)) rather than the scores (O(R·K)). Other dtypes: the product in
  // the model's dtype, as HF computes it, then float32.
  auto lhs = f32 ? qb * scale_ : qb;
  if (group_ > 1) lhs = lhs.reshape({B_, n_kv_, group_ * R, d_head_});  // heads kv·G + g
  auto scores = torch::matmul(lhs, kb.transpose(-1, -2)).view({B_, n_heads_, R, K});
  if (!f32) scores = scores.to(torch::kFloat32) * scale_;
  if (softcap_ > 0) scores = torch::tanh(scores / softcap_) * softcap_;  // HF Gemma2: before the mask

  const auto visible = [&](int64_t c0, int64_t c1) { return allowed_block(config_, q0, q1, c0, c1, device); };
  if (need_allowed || terms_ || at::GradMode::is_enabled()) s.allowed = visible(k0, k1);

  auto logits = scores;
  s.in = block_inputs(q0, q1, k0, k1, terms_);
  if (terms_) {
    s.in.scores = scores;
    s.in.allowed = s.allowed;
    encoding_.add_score_terms(s.in, s.terms);
    s.in.scores = at::Tensor();  // the terms are made; logits below may be masked in place
    if (s.terms.content.defined()) logits = logits + s.terms.content;
    if (s.terms.position.defined()) logits = logits + s.terms.position;
  }

  // The mask touches only the columns where some row has a hidden key: the causal diagonal
  // tile and, with a sliding window, the oldest keys; with chunks, the keys before the last
  // row's chunk. Columns left of these are visible to every row of the block.
  const int64_t W = config_.sliding_window;
  std::vector<std::pair<int64_t, int64_t>> spans;
  if (config_.causal && std::max(q0 + 1, k0) < k1) spans.emplace_back(std::max(q0 + 1, k0), k1);
  if (W > 0 && std::min(q1 - W, k1) > k0) spans.emplace_back(k0, std::min(q1 - W, k1));
  if (const int64_t c0 = chunk_begin(config_, q1 - 1); std::min(c0, k1) > k0) spans.emplace_back(k0, std::min(c0, k1));
  if (W > 0 && both_ways(config_) && std::max(q0 + W, k0) < k1) spans.emplace_back(std::max(q0 + W, k0), k1);
  if (config_.mask_first_key && k0 == 0 && q1 > 1) spans.emplace_back(0, 1);
  if (!spans.empty()) {
    if (at::GradMode::is_enabled()) {  // training: out of place, autograd stays simple
      logits = logits.masked_fill(s.allowed.logical_not(), kNegInf);
    } else {  // logits is this block's own tensor: mask the spans in place
      for (const auto& [c0, c1] : spans)
        logits.narrow(-1, c0 - k0, c1 - c0).masked_fill_(visible(c0, c1).logical_not(), kNegInf);
    }
  }
  s.logits = logits;
  return s;
}

at::Tensor LayerAttention::weighted_values(const at::Tensor& weights, const Scores& s) const {
  if (!v_.defined()) throw Error("attention: the values were not kept, so z cannot be computed");
  const int64_t R = s.q1 - s.q0, K = s.k1 - s.k0;
  const auto vb = narrow_unless_whole(v_, 2, s.k0, K);
  auto w = weights.to(v_.scalar_type());
  if (group_ > 1) w = w.reshape({B_, n_kv_, group_ * R, K});
  auto z = torch::matmul(w, vb).view({B_, n_heads_, R, d_value_});
  if (value_term_) z = z + encoding_.value_term(s.in, weights).to(z.scalar_type());
  return z;
}

AttentionBlock LayerAttention::make_block(const Scores& s, const BlockRequest& what,
                                          const at::Tensor& lse) const {
  AttentionBlock out;
  out.q_begin = s.q0, out.q_end = s.q1, out.k_begin = s.k0, out.k_end = s.k1;
  out.allowed = s.allowed;
  if (what.scores) out.scores = s.logits;
  if (what.pattern || what.z) {
    // exp(−inf − lse) = 0 hides masked keys as the softmax does. A learned sink is one more
    // term of each row's normaliser (whole rows here when no lse is given).
    const auto normaliser = lse.defined() || !sinks_.defined()
                                ? lse
                                : torch::logaddexp(torch::logsumexp(s.logits, -1), sinks_.expand({B_, n_heads_, s.q1 - s.q0}));
    const auto pattern = normaliser.defined() ? (s.logits - normaliser.unsqueeze(-1)).exp_() : torch::softmax(s.logits, -1);
    if (what.pattern) out.pattern = pattern;
    if (what.z) out.z = weighted_values(pattern, s);
  }
  if (what.position && s.terms.position.defined())
    out.position = s.terms.position.expand(s.logits.sizes()).masked_fill(s.allowed.logical_not(), 0.0);
  if (what.cope && s.terms.cope_gates.defined()) {
    out.cope_gates = s.terms.cope_gates;
    out.cope_positions = s.terms.cope_positions;
  }
  return out;
}

void LayerAttention::check_rows(int64_t q_begin, int64_t q_end) const {
  if (q_begin < 0 || q_end > T_ || q_begin >= q_end)
    throw Error("attention: rows [" + std::to_string(q_begin) + ", " + std::to_string(q_end) +
                ") are not inside [0, " + std::to_string(T_) + ")");
}

AttentionBlock LayerAttention::rows(int64_t q_begin, int64_t q_end, const BlockRequest& what) const {
  check_rows(q_begin, q_end);
  const auto [k0, k1] = key_range(q_begin, q_end);
  return make_block(block_scores(q_begin, q_end, k0, k1, what.any_map()), what, {});
}

at::Tensor LayerAttention::row_lse(int64_t q_begin, int64_t q_end) const {
  check_rows(q_begin, q_end);
  if (fused_lse_ && !records_gradients()) return fused_rows(q_begin, q_end, true).lse;
  const auto [k0, k1] = key_range(q_begin, q_end);
  const int64_t R = q_end - q_begin;
  const int64_t chunk = encoding_.needs_whole_rows()
                            ? k1 - k0
                            : std::max<int64_t>(64, block_bytes_ / std::max<int64_t>(B_ * n_heads_ * R * 4, 1));
  // The online recurrence of z_streamed() without the values: m running max, l Σ exp(s − m).
  auto m = torch::full({B_, n_heads_, R}, kNegInf, torch::dtype(torch::kFloat32).device(q_.device()));
  auto l = torch::zeros_like(m);
  if (sinks_.defined()) {  // the sink's term first: m = sink, l = exp(sink − m) = 1
    m = sinks_.expand({B_, n_heads_, R}).clone();
    l = torch::ones_like(m);
  }
  for (int64_t c0 = k0; c0 < k1; c0 += chunk) {
    const auto logits = block_scores(q_begin, q_end, c0, std::min(k1, c0 + chunk), false).logits;
    const auto m_new = torch::maximum(m, std::get<0>(logits.max(-1)));
    const auto m_safe = m_new.masked_fill(m_new.isneginf(), 0.0);
    l = l * (m - m_safe).exp() + (logits - m_safe.unsqueeze(-1)).exp().sum(-1);
    m = m_new;
  }
  return m + l.log();
}

AttentionBlock LayerAttention::region(int64_t q_begin, int64_t q_end, int64_t k_begin, int64_t k_end,
                                      const BlockRequest& what, const at::Tensor& lse) const {
  check_rows(q_begin, q_end);
  const auto [first, last] = key_range(q_begin, q_end);
  const int64_t k0 = std::max(k_begin, first), k1 = std::min(k_end, last);
  if (k0 >= k1)
    throw Error("attention: rows [" + std::to_string(q_begin) + ", " + std::to_string(q_end) +
                ") see no key of [" + std::to_string(k_begin) + ", " + std::to_string(k_end) + ")");
  if (what.pattern && (!lse.defined() || lse.dim() != 3 || lse.size(0) != B_ ||
                       lse.size(1) != n_heads_ || lse.size(2) != q_end - q_begin))
    throw Error("attention: the region's lse must be [" + std::to_string(B_) + ", " +
                std::to_string(n_heads_) + ", " + std::to_string(q_end - q_begin) + "], got " +
                shape_str(lse));
  BlockRequest maps = what;
  maps.z = false;
  if (encoding_.needs_whole_rows()) {  // CoPE: p_ij sums the gates of every later key
    auto whole = make_block(block_scores(q_begin, q_end, first, last, true), maps, lse);
    const auto cut = [&](at::Tensor& t) {
      if (t.defined()) t = t.narrow(-1, k0 - first, k1 - k0);
    };
    for (auto* t : {&whole.allowed, &whole.scores, &whole.pattern, &whole.position,
                    &whole.cope_gates, &whole.cope_positions})
      cut(*t);
    whole.k_begin = k0, whole.k_end = k1;
    return whole;
  }
  return make_block(block_scores(q_begin, q_end, k0, k1, true), maps, lse);
}

FusedAttention LayerAttention::fused_rows(int64_t q0, int64_t q1, bool with_lse) const {
  const auto [k0, k1] = key_range(q0, q1);
  const auto qb = narrow_unless_whole(q_, 2, q0, q1 - q0);
  const auto kb = narrow_unless_whole(k_, 2, k0, k1 - k0);
  // Without kept values (the GUI keeps q and k) only the lse is asked for: k stands in for v.
  const auto vb = v_.defined() ? narrow_unless_whole(v_, 2, k0, k1 - k0) : kb;
  const auto device = q_.device();
  if (terms_) {  // the encoding's terms and the mask as one float bias
    const auto allowed = allowed_block(config_, q0, q1, k0, k1, device);
    auto in = block_inputs(q0, q1, k0, k1, true);
    in.allowed = allowed;
    ScoreTerms terms;
    encoding_.add_score_terms(in, terms);
    return fused_attention(qb, kb, vb, terms_bias(terms, allowed), false, scale_, with_lse);
  }
  const auto mask = kernel_mask(config_, q0, q1, k0, k1);
  return fused_attention(qb, kb, vb, mask.needs_allowed ? allowed_block(config_, q0, q1, k0, k1, device) : at::Tensor(),
                         mask.causal, scale_, with_lse);
}

at::Tensor LayerAttention::fused_output(const AttentionBlocking& blocking) const {
  // One call where the kernel's own mask suffices (causal or none); blocks of rows where a
  // float mask [rows, keys] must be built (terms, sliding window, the first key masked).
  const bool one_call = !terms_ && config_.sliding_window == 0 && config_.attention_chunk_size == 0 &&
                        !config_.mask_first_key;
  const int64_t R = one_call ? T_ : block_rows(blocking);
  if (R >= T_) return fused_rows(0, T_, false).z.transpose(1, 2).contiguous();
  RowsOutput out(q_, T_, d_value_, false);
  for (int64_t q0 = 0; q0 < T_; q0 += R) out.add(q0, fused_rows(q0, std::min(T_, q0 + R), false).z);
  return out.take();
}

at::Tensor LayerAttention::z_streamed(int64_t q_begin, int64_t q_end, int64_t key_chunk) const {
  const auto [k0, k1] = key_range(q_begin, q_end);
  if (key_chunk <= 0 || k1 - k0 <= key_chunk || encoding_.needs_whole_rows()) {
    BlockRequest z_only;
    z_only.z = true;
    return rows(q_begin, q_end, z_only).z;
  }
  const int64_t R = q_end - q_begin;
  const auto f32 = torch::dtype(torch::kFloat32).device(q_.device());
  auto m = torch::full({B_, n_heads_, R, 1}, kNegInf, f32);  // running row max
  auto l = torch::zeros({B_, n_heads_, R, 1}, f32);          // running sum of exp(s − m)
  auto acc = torch::zeros({B_, n_heads_, R, d_value_}, f32);  // running Σ exp(s − m)·v
  if (sinks_.defined()) {  // the sink adds exp(sink − m) to the normaliser and nothing to acc
    m = sinks_.unsqueeze(-1).expand({B_, n_heads_, R, 1}).clone();
    l = torch::ones_like(m);
  }
  const bool in_place = !at::GradMode::is_enabled();
  for (int64_t c0 = k0; c0 < k1; c0 += key_chunk) {
    const auto s = block_scores(q_begin, q_end, c0, std::min(k1, c0 + key_chunk), false);
    const auto m_new = torch::maximum(m, std::get<0>(s.logits.max(-1, /*keepdim=*/true)));
    // Rows with no visible key yet keep m = −inf; exp(−inf − 0) = 0 leaves them empty.
    const auto m_safe = m_new.masked_fill(m_new.isneginf(), 0.0);
    auto p = s.logits - m_safe;
    p = in_place ? p.exp_() : p.exp();
    const auto correction = (m - m_safe).exp();
    l = l * correction + p.sum(-1, /*keepdim=*/true);
    acc = acc * correction + weighted_values(p, s).to(torch::kFloat32);
    m = m_new;
  }
  return (acc / l).to(q_.scalar_type());
}

at::Tensor LayerAttention::output(const BlockRequest& maps, const AttentionBlocking& blocking,
                                  const std::function<void(const AttentionBlock&)>& on_block) const {
  RowsOutput out(q_, T_, d_value_, records_gradients());
  if (maps.any_map() && fused(blocking)) {
    // Maps from the block's scores, z from the fused kernel (as without maps, so capturing a
    // map leaves the forward unchanged). Float32: the kernel's row lse gives the pattern as
    // exp(scores − lse), one pass instead of a softmax. Other dtypes keep the softmax of the
    // block's own scores: their product is rounded to the dtype (as HF's eager path does),
    // the kernel's is not, so its lse would not normalise them.
    const bool kernel_lse = fused_lse_ && q_.scalar_type() == torch::kFloat32;
    const int64_t R = block_rows(blocking);
    for (int64_t q0 = 0; q0 < T_; q0 += R) {
      const int64_t q1 = std::min(T_, q0 + R);
      const auto [k0, k1] = key_range(q0, q1);
      const auto s = block_scores(q0, q1, k0, k1, true);
      const auto mask = terms_ ? KernelMask{} : kernel_mask(config_, q0, q1, k0, k1);
      const auto bias = terms_ ? terms_bias(s.terms, s.allowed) : mask.needs_allowed ? s.allowed : at::Tensor();
      const auto f = fused_attention(narrow_unless_whole(q_, 2, q0, q1 - q0),
                                     narrow_unless_whole(k_, 2, k0, k1 - k0),
                                     narrow_unless_whole(v_, 2, k0, k1 - k0), bias, mask.causal,
                                     scale_, kernel_lse);
      if (on_block) on_block(make_block(s, maps, f.lse));
      out.add(q0, f.z);
    }
  } else if (maps.any_map() || encoding_.needs_whole_rows()) {
    BlockRequest what = maps;
    what.z = true;
    const int64_t R = block_rows(blocking);
    for (int64_t q0 = 0; q0 < T_; q0 += R) {
      auto block = rows(q0, std::min(T_, q0 + R), what);
      if (on_block && maps.any_map()) on_block(block);
      out.add(q0, block.z);
    }
  } else if (fused(blocking)) {
    return fused_output(blocking);
  } else {
    const int64_t R = blocking.query_rows > 0 ? blocking.query_rows
                                                : std::min(T_, q_.is_cuda() ? kCudaStreamRows : kStreamRows);
    const int64_t chunk =
        blocking.key_chunk > 0
            ? blocking.key_chunk
            : std::max<int64_t>(64, block_bytes_ / std::max<int64_t>(B_ * n_heads_ * R * 4, 1));
    for (int64_t q0 = 0; q0 < T_; q0 += R) out.add(q0, z_streamed(q0, std::min(T_, q0 + R), chunk));
  }
  return out.take();
}

namespace reference {

WholeAttention whole_attention(const ModelConfig& c, const PositionEncoding& encoding,
                               const LayerAttentionInputs& in) {
  const int64_t T = in.q.size(2), H = c.n_heads, G = c.n_heads / c.n_kv_heads;
  const auto device = in.q.device();
  const auto i = positions(0, T, device).unsqueeze(1), j = positions(0, T, device).unsqueeze(0);
  auto allowed = c.causal ? (j <= i) : torch::ones({T, T}, torch::dtype(torch::kBool).device(device));
  if (c.sliding_window > 0) allowed = allowed & (window_distance(c, i - j) < c.sliding_window);
  if (c.attention_chunk_size > 0) allowed = allowed & same_chunk(c, i, j);
  if (c.mask_first_key) allowed = allowed & ((j != 0) | (i == 0));
  const auto k = in.k.repeat_interleave(G, 1), v = in.v.repeat_interleave(G, 1);
  const double scale = c.attention_scale();
  const auto qk = torch::matmul(in.q, k.transpose(-1, -2)).to(torch::kFloat32);
  auto logits = qk * scale;
  if (c.attn_logit_softcap > 0) logits = torch::tanh(logits / c.attn_logit_softcap) * c.attn_logit_softcap;
  ScoreTerms terms;
  AttentionInputs a;
  if (encoding.has_position_scores() || encoding.has_value_term()) {
    LayerCache cache;
    a.layer = in.layer;
    a.h = in.h;
    a.q = in.q;
    a.k = k;
    a.v = v;
    a.scores = logits;
    a.allowed = allowed;
    a.q_pos = positions(in.position_offset, in.position_offset + T, device);
    a.k_pos = positions(in.position_offset, in.position_offset + T, device);
    a.length = T;
    a.scale = scale;
    a.causal = c.causal;
    encoding.add_score_terms(a, terms);
  }
  if (terms.content.defined()) logits = logits + terms.content;
  if (terms.position.defined()) logits = logits + terms.position;
  WholeAttention out;
  out.scores = logits.masked_fill(allowed.logical_not(), kNegInf);
  if (in.sinks.defined()) {  // HF GptOss eager: the sink as one more column, dropped after
    const auto sink = in.sinks.to(torch::kFloat32).view({1, H, 1, 1}).expand({out.scores.size(0), H, T, 1});
    out.pattern = torch::softmax(torch::cat({out.scores, sink}, -1), -1).narrow(-1, 0, out.scores.size(-1));
  } else {
    out.pattern = torch::softmax(out.scores, -1);
  }
  if (terms.position.defined())
    out.position = terms.position.expand(out.scores.sizes()).masked_fill(allowed.logical_not(), 0.0);
  out.cope_gates = terms.cope_gates;
  out.cope_positions = terms.cope_positions;
  auto z = torch::matmul(out.pattern.to(v.scalar_type()), v);
  if (encoding.has_value_term()) z = z + encoding.value_term(a, out.pattern).to(z.scalar_type());
  out.z = z.transpose(1, 2);
  return out;
}

}  // namespace reference

}  // namespace poslens
