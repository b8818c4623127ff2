#include "core/pe_cope.h"

#include <torch/torch.h>

#include "core/error.h"

namespace poslens {

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
  at::Tensor gate_logits;
  switch (options_.gates) {
    case CopeGateSource::Keys:
      gate_logits = in.qk;
      break;
    case CopeGateSource::SepKeys: {
      const int64_t B = in.h.size(0), T = in.h.size(1);
      const auto gate_keys = at::linear(in.h.to(f32), w.gate_proj.to(f32))
                                 .view({B, T, n_heads_, d_head_})
                                 .transpose(1, 2);
      gate_logits = torch::matmul(q, gate_keys.transpose(-1, -2));
      break;
    }
    case CopeGateSource::Values:
      gate_logits = torch::matmul(q, in.v.to(f32).transpose(-1, -2));
      break;
  }
  // CoPE_ALiBi has no embedding: a zero table leaves pos_logits 0 and keeps the positions.
  const auto pos_emb = options_.position == CopePositionTerm::Embedding
                           ? w.pos_emb.to(f32)
                           : torch::zeros({d_head_, options_.npos_max}, q.options());
  const auto cope = cope_positions(gate_logits, q, pos_emb, in.causal, in.scale, options_.logit_scale);
  out.cope_gates = cope.gates;
  out.cope_positions = cope.positions;
  ScoreTerms::add(out.position, options_.position == CopePositionTerm::Embedding
                                    ? cope.pos_logits
                                    : cope_alibi_term(cope.positions, w.slopes.to(f32)));
}

}  // namespace poslens
