#include "core/cope.h"

#include <torch/torch.h>

#include <string>

#include "core/error.h"
#include "core/shape_text.h"

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
  const int64_t q_len = q.size(2), k_len = gate_logits.size(3), npos_max = pos_emb.size(1);
  if (causal && q_len > k_len)
    throw Error("cope_positions: causal with query length " + std::to_string(q_len) +
                " > key length " + std::to_string(k_len));

  const auto dtype = q.scalar_type();
  CopeOutput out;
  out.gates = torch::sigmoid(gate_logits.to(dtype) * scale);
  at::Tensor masked;
  if (causal) {
    masked = torch::ones({q_len, k_len}, torch::TensorOptions().dtype(torch::kBool).device(q.device()))
                 .tril(k_len - q_len)
                 .logical_not();
    out.gates = out.gates.masked_fill(masked, 0);  // exactly 0, not sigmoid(-inf) rounding
  }
  // p_ij = sum_{t >= j} g_it: flip, cumulative sum, flip back (the reference's order).
  out.positions = out.gates.flip({-1}).cumsum(-1).flip({-1}).clamp_max(double(npos_max - 1));

  const auto z_int = torch::matmul(q, pos_emb.to(dtype));  // [B, H, Q, npos_max]: z_i[p]
  const auto floor = out.positions.floor();
  const auto w = out.positions - floor;
  const auto z_floor = z_int.gather(-1, floor.to(torch::kLong));
  const auto z_ceil = z_int.gather(-1, out.positions.ceil().to(torch::kLong));
  auto z = z_ceil * w + z_floor * (1 - w);
  if (mode == CopeLogitScale::DivideAll) z = z * scale;
  if (causal) z = z.masked_fill(masked, 0);
  out.pos_logits = z;
  return out;
}

at::Tensor cope_attention_logits(const at::Tensor& qk, const CopeOutput& cope, double scale) {
  if (!cope.pos_logits.defined() || !qk.sizes().equals(cope.pos_logits.sizes()))
    throw Error("cope_attention_logits: qk " + shape_str(qk) + " does not match the CoPE terms");
  return qk * scale + cope.pos_logits;
}

at::Tensor cope_alibi_term(const at::Tensor& positions, const at::Tensor& slopes) {
  if (positions.dim() != 4 || slopes.dim() != 1 || slopes.size(0) != positions.size(1))
    throw Error("cope_alibi_term: need positions [B, H, Q, K] and slopes [H], got " +
                shape_str(positions) + " and " + shape_str(slopes));
  return positions * slopes.to(positions.scalar_type()).view({1, -1, 1, 1});
}

}  // namespace poslens
