#include "core/position/heinsen.h"

#include <torch/torch.h>

#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/base/shape_text.h"
#include "core/position/component_params.h"

namespace poslens {

namespace {

// Validates the inputs and returns s0 as a tensor of shape [..., 1, d] (zeros when undefined).
at::Tensor initial_state(const at::Tensor& log_p, const at::Tensor& h, const at::Tensor& s0,
                         const char* where) {
  if (log_p.dim() < 2 || !log_p.sizes().equals(h.sizes()))
    throw Error(std::string(where) + ": log_p and h must have the same shape [..., T, d]");
  if (!log_p.is_floating_point() || !h.is_floating_point())
    throw Error(std::string(where) + ": log_p and h must be floating point");
  std::vector<int64_t> shape(log_p.sizes().begin(), log_p.sizes().end());
  shape[shape.size() - 2] = 1;
  const auto dtype = c10::promoteTypes(log_p.scalar_type(), h.scalar_type());
  if (!s0.defined()) return torch::zeros(shape, log_p.options().dtype(dtype));
  try {
    return s0.to(dtype).expand(shape);
  } catch (const c10::Error&) {
    throw Error(std::string(where) + ": s0 does not broadcast to [..., 1, d]");
  }
}

}  // namespace

at::Tensor heinsen_scan(const at::Tensor& log_p, const at::Tensor& h, const at::Tensor& s0) {
  const auto init = initial_state(log_p, h, s0, "heinsen_scan");
  const auto out_dtype = init.scalar_type();
  // a* grows like -T and h - a* like +T; their sum cancels, so the scan runs in float64
  // (float32 would lose ~T·6e-8 absolute) and casts back to the inputs' dtype.
  const c10::ScalarType dtype = torch::kFloat64;
  // Position 0 carries the initial state with a*_0 = 0, exactly as the reference pads.
  const auto a_star = torch::cat({torch::zeros_like(init, init.options().dtype(dtype)), log_p.to(dtype).cumsum(-2)}, -2);
  const auto values = torch::cat({init.to(dtype), h.to(dtype)}, -2);  // [..., 1+T, d]
  const auto s = a_star + torch::logcumsumexp(values - a_star, -2);
  return s.narrow(-2, 1, log_p.size(-2)).to(out_dtype);
}

at::Tensor heinsen_sequential(const at::Tensor& log_p, const at::Tensor& h, const at::Tensor& s0) {
  auto state = initial_state(log_p, h, s0, "heinsen_sequential").squeeze(-2);  // [..., d]
  const auto dtype = state.scalar_type();
  std::vector<at::Tensor> out;
  const int64_t t_len = log_p.size(-2);
  out.reserve(static_cast<size_t>(t_len));
  for (int64_t i = 0; i < t_len; ++i) {
    const auto lp = log_p.select(-2, i).to(dtype), hi = h.select(-2, i).to(dtype);
    state = torch::logaddexp(lp + state, hi);
    out.push_back(state);
  }
  if (out.empty()) return torch::empty(log_p.sizes(), log_p.options().dtype(dtype));
  return torch::stack(out, -2);
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

ComponentRecipe heinsen_recipe(const PositionComponentSpec& spec, const PositionContext& c) {
  const ComponentParams p(spec, {"d_pe"});
  const int64_t d_pe = p.required_integer("d_pe"), d = c.d_model;
  p.at_least("d_pe", d_pe, 1);
  // Init: nn.Linear's default for the three projections, as the reference (glassroom/
  // heinsen_position_embeddings) builds them with nn.Linear.
  const auto in_d = WeightInit::linear_default(d), in_pe = WeightInit::linear_default(d_pe);
  return {{{"heinsen_p.weight", {d_pe, d}, false, false, in_d},
           {"heinsen_p.bias", {d_pe}, false, false, in_d},
           {"heinsen_h.weight", {d_pe, d}, false, false, in_d},
           {"heinsen_h.bias", {d_pe}, false, false, in_d},
           {"heinsen_r.weight", {d, d_pe}, false, false, in_pe},
           {"heinsen_r.bias", {d}, false, false, in_pe}},
          [](const PositionWeights& w) {
            return std::make_unique<HeinsenEncoding>(HeinsenWeights{
                w.model_level("heinsen_p.weight"), w.model_level("heinsen_p.bias"),
                w.model_level("heinsen_h.weight"), w.model_level("heinsen_h.bias"),
                w.model_level("heinsen_r.weight"), w.model_level("heinsen_r.bias")});
          }};
}

}  // namespace poslens
