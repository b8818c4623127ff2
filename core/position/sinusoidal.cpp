#include "core/position/sinusoidal.h"

#include <torch/torch.h>

#include <string>

#include "core/base/error.h"
#include "core/position/component_params.h"

namespace poslens {

namespace {
void check_d_model(int64_t d_model, const char* where) {
  if (d_model <= 0 || d_model % 2 != 0)
    throw Error(std::string(where) + ": d_model " + std::to_string(d_model) +
                " must be even and positive");
}
}  // namespace

at::Tensor sinusoidal_frequencies(int64_t d_model) {
  check_d_model(d_model, "sinusoidal_frequencies");
  const auto two_k = torch::arange(0, d_model, 2, torch::kFloat64);
  return torch::pow(10000.0, -two_k / static_cast<double>(d_model));
}

at::Tensor sinusoidal_embedding(const at::Tensor& positions, int64_t d_model,
                                SinusoidalLayout layout) {
  check_d_model(d_model, "sinusoidal_embedding");
  if (positions.dim() != 1) throw Error("sinusoidal_embedding: positions must be 1-D [n]");
  const auto freqs = sinusoidal_frequencies(d_model).to(positions.device());
  const auto angles = positions.to(torch::kFloat64).unsqueeze(1) * freqs;  // [n, d/2]
  at::Tensor out;
  if (layout == SinusoidalLayout::Interleaved)
    out = torch::stack({angles.sin(), angles.cos()}, 2).flatten(1);  // [n, d/2, 2] -> [n, d]
  else
    out = torch::cat({angles.sin(), angles.cos()}, 1);
  return out.to(torch::kFloat32);
}

namespace reference {

at::Tensor sinusoidal_table(int64_t n_pos, int64_t d_model) {
  if (n_pos < 0) throw Error("sinusoidal_table: n_pos " + std::to_string(n_pos) + " < 0");
  check_d_model(d_model, "sinusoidal_table");
  return sinusoidal_embedding(torch::arange(n_pos, torch::kFloat64), d_model);
}

}  // namespace reference

SinusoidalEncoding::SinusoidalEncoding(int64_t d_model) : d_model_(d_model) {
  sinusoidal_frequencies(d_model_);  // rejects an odd d_model now
}

std::string SinusoidalEncoding::describe() const { return "sinusoidal absolute (Vaswani)"; }

InputTerm SinusoidalEncoding::input_term(const at::Tensor& tok, const at::Tensor& positions) const {
  const auto table = sinusoidal_embedding(positions.to(torch::kCPU), d_model_);
  return {table.to(tok.device(), tok.scalar_type()).unsqueeze(0).expand_as(tok), {}};
}

at::Tensor SinusoidalEncoding::position_table(int64_t n_pos) const {
  if (n_pos < 0) throw Error("sinusoidal positions: n_pos " + std::to_string(n_pos) + " < 0");
  return sinusoidal_embedding(torch::arange(n_pos, torch::kFloat64), d_model_);
}

ComponentRecipe sinusoidal_recipe(const PositionComponentSpec& spec, const PositionContext& c) {
  ComponentParams(spec, {});
  const int64_t d = c.d_model;
  return {{}, [d](const PositionWeights&) { return std::make_unique<SinusoidalEncoding>(d); }};
}

}  // namespace poslens
