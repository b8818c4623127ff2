#include "core/heinsen.h"

#include <torch/torch.h>

#include <string>
#include <vector>

#include "core/error.h"

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

}  // namespace poslens
