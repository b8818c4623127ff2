#include "core/pe_absolute.h"

#include <torch/torch.h>

#include "core/error.h"
#include "core/shape_text.h"

namespace poslens {

SinusoidalEncoding::SinusoidalEncoding(int64_t d_model) : d_model_(d_model) {
  sinusoidal_frequencies(d_model_);  // rejects an odd d_model now
}

std::string SinusoidalEncoding::describe() const { return "sinusoidal absolute (Vaswani)"; }

InputTerm SinusoidalEncoding::input_term(const at::Tensor& tok, const at::Tensor& positions) const {
  const auto table = sinusoidal_embedding(positions.to(torch::kCPU), d_model_);
  return {table.to(tok.device(), tok.scalar_type()).unsqueeze(0).expand_as(tok), {}};
}

HeinsenEncoding::HeinsenEncoding(HeinsenWeights w) : w_(std::move(w)) {
  for (const auto* t : {&w_.w_p, &w_.b_p, &w_.w_h, &w_.b_h, &w_.w_r, &w_.b_r})
    if (!t->defined()) throw Error("heinsen position encoding: a weight is missing");
  const int64_t d_pe = w_.w_p.size(0), d_model = w_.w_p.size(1);
  if (w_.w_h.sizes() != w_.w_p.sizes() || w_.w_r.dim() != 2 || w_.w_r.size(0) != d_model ||
      w_.w_r.size(1) != d_pe)
    throw Error("heinsen position encoding: W_p " + shape_str(w_.w_p) + ", W_h " +
                shape_str(w_.w_h) + " and W_R " + shape_str(w_.w_r) + " do not fit together");
}

std::string HeinsenEncoding::describe() const {
  return "Heinsen exponentiated states (d_pe=" + std::to_string(w_.w_p.size(0)) + ")";
}

InputTerm HeinsenEncoding::input_term(const at::Tensor& tok, const at::Tensor& positions) const {
  (void)positions;
  const auto log_p = torch::log_sigmoid(at::linear(tok, w_.w_p, w_.b_p));
  const auto h = at::linear(tok, w_.w_h, w_.b_h);
  const auto s = heinsen_scan(log_p, h).to(tok.scalar_type());
  return {at::linear(s, w_.w_r, w_.b_r), s};
}

}  // namespace poslens
