#include "core/position/cope.h"

#include <torch/torch.h>

#include <string>
#include <tuple>

#include "core/base/error.h"
#include "core/base/shape_text.h"
#include "core/position/component_params.h"
#include "core/position/cope_interpolate.h"
#include "core/position/alibi.h"

namespace poslens {

CopeOutput cope_positions(const at::Tensor& gate_logits, const at::Tensor& q,
                          const at::Tensor& pos_emb, bool causal, double scale,
                          CopeLogitScale mode) {
  if (q.dim() != 4) throw Error("cope_positions: q must be [B, H, Q, d], got " + shape_str(q));
  if (gate_logits.dim() != 4 || gate_logits.size(0) != q.size(0) ||
      gate_logits.size(1) != q.size(1) || gate_logits.size(2) != q.size(2))
    throw Error("cope_positions: gate_logits must be [B, H, Q, K] matching q " + shape_str(q) +
                ", got " + shape_str(gate_logits));
  if (pos_emb.dim() != 2 || pos_emb.size(0) != q.size(3) || pos_emb.size(1) < 1)
    throw Error("cope_positions: pos_emb must be [d=" + std::to_string(q.size(3)) +
                ", npos_max >= 1], got " + shape_str(pos_emb));
  const int64_t q_len = q.size(2), k_len = gate_logits.size(3);
  if (causal && q_len > k_len)
    throw Error("cope_positions: causal with query length " + std::to_string(q_len) +
                " > key length " + std::to_string(k_len));

  const auto dtype = q.scalar_type();
  const auto gates = torch::sigmoid(gate_logits.to(dtype) * scale);
  at::Tensor allowed;
  if (causal)
    allowed = torch::ones({q_len, k_len}, torch::TensorOptions().dtype(torch::kBool).device(q.device()))
                  .tril(k_len - q_len);
  return cope_from_gates(causal ? gates.masked_fill(allowed.logical_not(), 0) : gates, q, pos_emb,
                         allowed, mode == CopeLogitScale::DivideAll ? scale : 1.0);
}

CopeOutput cope_from_gates(const at::Tensor& gates, const at::Tensor& q, const at::Tensor& pos_emb,
                           const at::Tensor& allowed, double z_scale) {
  const auto dtype = q.scalar_type();
  CopeOutput out;
  out.gates = gates;
  const auto z_int = torch::matmul(q, pos_emb.to(dtype));  // [B, H, Q, npos_max]: z_i[p]
  std::tie(out.pos_logits, out.positions) = cope_interpolate(gates, z_int, allowed, z_scale);
  return out;
}

namespace reference {

at::Tensor cope_attention_logits(const at::Tensor& qk, const CopeOutput& cope, double scale) {
  if (!cope.pos_logits.defined() || !qk.sizes().equals(cope.pos_logits.sizes()))
    throw Error("cope_attention_logits: qk " + shape_str(qk) + " does not match the CoPE terms");
  return qk * scale + cope.pos_logits;
}

}  // namespace reference

at::Tensor cope_alibi_term(const at::Tensor& positions, const at::Tensor& slopes) {
  if (positions.dim() != 4 || slopes.dim() != 1 || slopes.size(0) != positions.size(1))
    throw Error("cope_alibi_term: need positions [B, H, Q, K] and slopes [H], got " +
                shape_str(positions) + " and " + shape_str(slopes));
  return positions * slopes.to(positions.scalar_type()).view({1, -1, 1, 1});
}

CopeEncoding::CopeEncoding(CopeOptions options, std::vector<CopeWeights> layers, int64_t n_heads,
                           int64_t d_head)
    : options_(options), layers_(std::move(layers)), n_heads_(n_heads), d_head_(d_head) {
  if (options_.npos_max < 1) throw Error("cope position encoding: npos_max must be >= 1");
  for (const auto& w : layers_) {
    if (options_.position == CopePositionTerm::Embedding && !w.pos_emb.defined())
      throw Error("cope position encoding: missing cope_pos_emb");
    if (options_.gates == CopeGateSource::SepKeys && !w.gate_proj.defined())
      throw Error("cope position encoding: gates \"sep_keys\" needs cope_gate_proj.weight");
    if (options_.position == CopePositionTerm::Alibi && !w.slopes.defined())
      throw Error("cope position encoding: position \"alibi\" needs slopes");
  }
}

std::string CopeEncoding::describe() const {
  const char* gates = options_.gates == CopeGateSource::Keys      ? "keys"
                      : options_.gates == CopeGateSource::SepKeys ? "sep_keys"
                                                                  : "values";
  std::string out = options_.position == CopePositionTerm::Alibi ? "CoPE_ALiBi (" : "CoPE (";
  out += "npos_max=" + std::to_string(options_.npos_max) + ", gates=" + gates;
  if (options_.position == CopePositionTerm::Embedding)
    out += options_.logit_scale == CopeLogitScale::DivideAll ? ", divide_all" : ", no_div";
  out += options_.shared ? ", shared across layers)" : ", per layer)";
  return out;
}

void CopeEncoding::add_score_terms(const AttentionInputs& in, ScoreTerms& out) const {
  const auto& w = layers_.at(static_cast<size_t>(in.layer));
  const auto f32 = torch::kFloat32;
  const auto q = in.q.to(f32);
  const int64_t Hs = in.heads();
  at::Tensor gate_logits;  // scaled: sigmoid(gate_logit / sqrt(d)) is the gate
  switch (options_.gates) {
    case CopeGateSource::Keys:
      gate_logits = in.scores;  // already scale·q·k
      break;
    case CopeGateSource::SepKeys: {
      // W_g h_j for every position and head, [B, H, T, d]: once per layer.
      const auto gate_keys = in.cached("cope.gate_keys", [&] {
        const int64_t B = in.h.size(0), T = in.h.size(1);
        return at::linear(in.h.to(f32), w.gate_proj.to(f32))
            .view({B, T, n_heads_, d_head_})
            .transpose(1, 2)
            .contiguous();
      });
      const auto keys = gate_keys.narrow(1, in.head_begin, Hs).narrow(2, in.k_begin, in.k.size(2));
      gate_logits = torch::matmul(q, keys.transpose(-1, -2)) * in.scale;
      break;
    }
    case CopeGateSource::Values:
      gate_logits = torch::matmul(q, in.v.to(f32).transpose(-1, -2)) * in.scale;
      break;
  }
  const auto gates = torch::sigmoid(gate_logits).masked_fill(in.allowed.logical_not(), 0);
  // CoPE_ALiBi has no embedding: a zero table leaves pos_logits 0 and keeps the positions.
  const auto pos_emb = options_.position == CopePositionTerm::Embedding
                           ? w.pos_emb.to(f32)
                           : torch::zeros({d_head_, options_.npos_max}, q.options());
  const double z_scale = options_.logit_scale == CopeLogitScale::DivideAll ? in.scale : 1.0;
  const auto cope = cope_from_gates(gates, q, pos_emb, in.allowed, z_scale);
  out.cope_gates = cope.gates;
  out.cope_positions = cope.positions;
  ScoreTerms::add(out.position,
                  options_.position == CopePositionTerm::Embedding
                      ? cope.pos_logits
                      : cope_alibi_term(cope.positions,
                                        w.slopes.to(f32).narrow(0, in.head_begin, Hs)));
}

ComponentRecipe cope_recipe(const PositionComponentSpec& spec, const PositionContext& c) {
  const ComponentParams p(spec, {"npos_max", "gates", "logit_scale", "position", "shared"});
  CopeOptions o;
  o.npos_max = p.required_integer("npos_max");
  p.at_least("npos_max", o.npos_max, 1);
  const auto gates = p.choice("gates", {"keys", "sep_keys", "values"});
  o.gates = gates == "keys" ? CopeGateSource::Keys
            : gates == "sep_keys" ? CopeGateSource::SepKeys : CopeGateSource::Values;
  o.logit_scale = p.choice("logit_scale", {"divide_all", "no_div"}) == "divide_all"
                      ? CopeLogitScale::DivideAll : CopeLogitScale::NoDiv;
  o.position = p.choice("position", {"embedding", "alibi"}) == "embedding"
                   ? CopePositionTerm::Embedding : CopePositionTerm::Alibi;
  o.shared = p.flag("shared", false);
  const int64_t H = c.n_heads, dh = c.d_head;
  std::vector<PeWeightSpec> weights;
  if (o.position == CopePositionTerm::Embedding)
    // Init: zeros, as facebookresearch/RAM projects/cope (nn.Parameter(torch.zeros(...))).
    weights.push_back({"cope_pos_emb", {dh, o.npos_max}, !o.shared, false,
                       {WeightInit::Kind::Constant, 0.0}});
  else
    // Init: ALiBi's -m_h (the decay used when no slopes are stored), then learned.
    weights.push_back({"cope_slopes", {H}, !o.shared, /*optional=*/true,
                       {WeightInit::Kind::AlibiSlopes}});
  if (o.gates == CopeGateSource::SepKeys)
    // Init: N(0, 0.02²) like the block's other projections.
    weights.push_back({"cope_gate_proj.weight", {H * dh, c.d_model}, !o.shared, false,
                       {WeightInit::Kind::Normal, 0.02}});
  return {weights, [=](const PositionWeights& w) {
            const auto emb = w.per_layer("cope_pos_emb", o.shared);
            const auto gate = w.per_layer("cope_gate_proj.weight", o.shared);
            auto slopes = w.per_layer("cope_slopes", o.shared);
            std::vector<CopeWeights> layers;
            for (size_t l = 0; l < emb.size(); ++l) {
              auto m = slopes[l];
              if (o.position == CopePositionTerm::Alibi && !m.defined())  // ALiBi-like decay
                m = -torch::tensor(alibi_slopes(H), torch::kFloat32).to(w.device);
              layers.push_back({emb[l], gate[l], m});
            }
            return std::make_unique<CopeEncoding>(o, std::move(layers), H, dh);
          }};
}

}  // namespace poslens
