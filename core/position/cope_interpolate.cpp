#include "core/position/cope_interpolate.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/base/shape_text.h"

namespace poslens {
namespace {

/// One row's tensors: gates, positions and z over its K keys, z_int over npos_max.
struct RowShape {
  int64_t rows = 0, queries = 0, keys = 0, npos = 0;
};

/// The position of key j from the running sum: float as at::cumsum stores it, clamped.
template <typename scalar_t>
scalar_t clamped(double sum, int64_t npos, bool* below_max) {
  const auto raw = static_cast<scalar_t>(sum);
  const auto top = static_cast<scalar_t>(npos - 1);
  *below_max = raw <= top;  // clamp_max passes the gradient where raw <= max
  const scalar_t p = std::min(raw, top);
  if (!(p >= 0)) throw Error("CoPE: a negative or NaN contextual position (gates must be >= 0)");
  return p;
}

/// The integer positions either side of p and p's weight on the upper one.
template <typename scalar_t>
struct Neighbours {
  int64_t lower, upper;
  scalar_t w;  ///< p - floor(p)
};

template <typename scalar_t>
Neighbours<scalar_t> neighbours(scalar_t p) {
  const scalar_t lower = std::floor(p);
  return {static_cast<int64_t>(lower), static_cast<int64_t>(std::ceil(p)), p - lower};
}

template <typename scalar_t>
void forward_rows(const RowShape& s, const scalar_t* gates, const scalar_t* z_int,
                  const bool* allowed, scalar_t z_scale, bool scaled, scalar_t* z, scalar_t* pos) {
  at::parallel_for(0, s.rows, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const scalar_t* g = gates + r * s.keys;
      const scalar_t* zi = z_int + r * s.npos;
      const bool* visible = allowed ? allowed + (r % s.queries) * s.keys : nullptr;
      scalar_t* zr = z + r * s.keys;
      scalar_t* pr = pos + r * s.keys;
      double sum = 0;  // at::cumsum's accumulator type on the CPU
      for (int64_t j = s.keys - 1; j >= 0; --j) {
        sum += g[j];
        bool below_max = false;
        const scalar_t p = clamped<scalar_t>(sum, s.npos, &below_max);
        if (visible && !visible[j]) {
          zr[j] = 0, pr[j] = 0;
          continue;
        }
        const auto n = neighbours(p);
        scalar_t v = zi[n.upper] * n.w + zi[n.lower] * (scalar_t(1) - n.w);
        if (scaled) v = v * z_scale;
        zr[j] = v, pr[j] = p;
      }
    }
  });
}

template <typename scalar_t>
void backward_rows(const RowShape& s, const scalar_t* gates, const scalar_t* z_int,
                   const bool* allowed, scalar_t z_scale, bool scaled, const scalar_t* grad_z,
                   const scalar_t* grad_pos, scalar_t* grad_gates, scalar_t* grad_z_int) {
  at::parallel_for(0, s.rows, 16, [&](int64_t r0, int64_t r1) {
    std::vector<double> grad_p(static_cast<size_t>(s.keys));
    for (int64_t r = r0; r < r1; ++r) {
      const scalar_t* g = gates + r * s.keys;
      const scalar_t* zi = z_int + r * s.npos;
      const bool* visible = allowed ? allowed + (r % s.queries) * s.keys : nullptr;
      const scalar_t* gz = grad_z ? grad_z + r * s.keys : nullptr;
      const scalar_t* gp = grad_pos ? grad_pos + r * s.keys : nullptr;
      scalar_t* gzi = grad_z_int + r * s.npos;  // zeroed by the caller
      double sum = 0;
      for (int64_t j = s.keys - 1; j >= 0; --j) {
        sum += g[j];
        bool below_max = false;
        const scalar_t p = clamped<scalar_t>(sum, s.npos, &below_max);
        double d_p = 0;  // dL/dp_ij
        if (!visible || visible[j]) {
          if (gz) {
            const auto n = neighbours(p);
            const scalar_t d_v = scaled ? gz[j] * z_scale : gz[j];
            gzi[n.upper] += d_v * n.w;
            gzi[n.lower] += d_v * (scalar_t(1) - n.w);
            d_p += static_cast<double>(d_v) * (zi[n.upper] - zi[n.lower]);  // floor, ceil: no slope
          }
          if (gp) d_p += gp[j];
        }
        grad_p[static_cast<size_t>(j)] = below_max ? d_p : 0.0;
      }
      // p_ij = sum_{t >= j} g_it, so dL/dg_it = sum_{j <= t} dL/dp_ij.
      double running = 0;
      scalar_t* gg = grad_gates + r * s.keys;
      for (int64_t t = 0; t < s.keys; ++t) gg[t] = static_cast<scalar_t>(running += grad_p[static_cast<size_t>(t)]);
    }
  });
}

RowShape row_shape(const at::Tensor& gates, const at::Tensor& z_int) {
  return {gates.numel() / std::max<int64_t>(gates.size(3), 1), gates.size(2), gates.size(3),
          z_int.size(3)};
}

/// t.contiguous(), or t itself when undefined (an absent mask or gradient).
at::Tensor contiguous_if_defined(const at::Tensor& t) { return t.defined() ? t.contiguous() : t; }

/// t's data, or nullptr when t is undefined.
template <typename T>
T* data_or_null(const at::Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// The mask, passed to the autograd function as a non-tensor argument: apply() cannot take an
/// undefined tensor, and the mask has no gradient.
struct Mask {
  at::Tensor allowed;  ///< bool [Q, K], or undefined
};

/// The fused pass as an autograd function: outputs {z, positions}.
struct CopeInterpolateFunction : torch::autograd::Function<CopeInterpolateFunction> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& gates_in,
                               const at::Tensor& z_int_in, const Mask& mask, double z_scale) {
    const auto gates = gates_in.contiguous(), z_int = z_int_in.contiguous();
    const auto allowed = contiguous_if_defined(mask.allowed);
    auto z = torch::empty_like(gates), positions = torch::empty_like(gates);
    const auto shape = row_shape(gates, z_int);
    AT_DISPATCH_FLOATING_TYPES(gates.scalar_type(), "cope_interpolate", [&] {
      forward_rows<scalar_t>(shape, gates.data_ptr<scalar_t>(), z_int.data_ptr<scalar_t>(),
                             data_or_null<bool>(allowed), static_cast<scalar_t>(z_scale),
                             z_scale != 1.0, z.data_ptr<scalar_t>(), positions.data_ptr<scalar_t>());
    });
    ctx->set_materialize_grads(false);  // an unused output (positions, mostly) gets no zeros
    ctx->save_for_backward({gates, z_int});
    ctx->saved_data["z_scale"] = z_scale;
    if (allowed.defined()) ctx->saved_data["allowed"] = allowed;
    return {z, positions};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &gates = saved[0], &z_int = saved[1];
    const auto allowed = ctx->saved_data.count("allowed") ? ctx->saved_data["allowed"].toTensor()
                                                          : at::Tensor();
    const double z_scale = ctx->saved_data["z_scale"].toDouble();
    const auto grad_z = contiguous_if_defined(grads[0]), grad_pos = contiguous_if_defined(grads[1]);
    auto grad_gates = torch::empty_like(gates), grad_z_int = torch::zeros_like(z_int);
    const auto shape = row_shape(gates, z_int);
    AT_DISPATCH_FLOATING_TYPES(gates.scalar_type(), "cope_interpolate_backward", [&] {
      backward_rows<scalar_t>(shape, gates.data_ptr<scalar_t>(), z_int.data_ptr<scalar_t>(),
                              data_or_null<bool>(allowed), static_cast<scalar_t>(z_scale),
                              z_scale != 1.0, data_or_null<scalar_t>(grad_z),
                              data_or_null<scalar_t>(grad_pos), grad_gates.data_ptr<scalar_t>(),
                              grad_z_int.data_ptr<scalar_t>());
    });
    return {grad_gates, grad_z_int, at::Tensor(), at::Tensor()};  // none for the mask, z_scale
  }
};

void check_shapes(const at::Tensor& gates, const at::Tensor& z_int, const at::Tensor& allowed) {
  if (gates.dim() != 4 || z_int.dim() != 4 || z_int.size(0) != gates.size(0) ||
      z_int.size(1) != gates.size(1) || z_int.size(2) != gates.size(2) || z_int.size(3) < 1)
    throw Error("cope_interpolate: gates [B, H, Q, K] and z_int [B, H, Q, npos_max >= 1] do not "
                "match: " + shape_str(gates) + ", " + shape_str(z_int));
  if (allowed.defined() && (allowed.dim() != 2 || allowed.size(0) != gates.size(2) ||
                            allowed.size(1) != gates.size(3)))
    throw Error("cope_interpolate: allowed must be [Q, K] of " + shape_str(gates) + ", got " +
                shape_str(allowed));
  if (gates.scalar_type() != z_int.scalar_type())
    throw Error("cope_interpolate: gates and z_int must have one dtype");
}

}  // namespace

std::pair<at::Tensor, at::Tensor> cope_interpolate(const at::Tensor& gates, const at::Tensor& z_int,
                                                   const at::Tensor& allowed, double z_scale) {
  check_shapes(gates, z_int, allowed);
  const bool fused = gates.device().is_cpu() && z_int.device().is_cpu() &&
                     (gates.scalar_type() == torch::kFloat32 || gates.scalar_type() == torch::kFloat64) &&
                     (!allowed.defined() || allowed.scalar_type() == torch::kBool);
  if (!fused) return reference::cope_interpolate(gates, z_int, allowed, z_scale);
  const auto out = CopeInterpolateFunction::apply(gates, z_int, Mask{allowed}, z_scale);
  return {out[0], out[1]};
}

namespace reference {

std::pair<at::Tensor, at::Tensor> cope_interpolate(const at::Tensor& gates, const at::Tensor& z_int,
                                                   const at::Tensor& allowed, double z_scale) {
  check_shapes(gates, z_int, allowed);
  const int64_t npos_max = z_int.size(3);
  // p_ij = sum_{t >= j} g_it: flip, cumulative sum, flip back (the reference's order, and no
  // cancellation as total − prefix would have on long rows).
  auto positions = gates.flip({-1}).cumsum(-1).flip({-1}).clamp_max(double(npos_max - 1));
  const auto floor = positions.floor();
  const auto w = positions - floor;
  const auto z_floor = z_int.gather(-1, floor.to(torch::kLong));
  const auto z_ceil = z_int.gather(-1, positions.ceil().to(torch::kLong));
  auto z = z_ceil * w + z_floor * (1 - w);
  if (z_scale != 1.0) z = z * z_scale;
  if (allowed.defined()) {
    // Hidden keys hold 0: left of a sliding window the reverse sum would repeat the row's total.
    z = z.masked_fill(allowed.logical_not(), 0);
    positions = positions.masked_fill(allowed.logical_not(), 0);
  }
  return {z, positions};
}

}  // namespace reference

}  // namespace poslens
