#include "core/position_encoding.h"

#include "core/error.h"
#include "core/learned_absolute.h"
#include "core/rope.h"

namespace poslens {
namespace {

/// NoPE: the model sees position only through the causal mask.
class NoPositionEncoding : public PositionEncoding {
 public:
  std::string describe() const override { return "NoPE (no position encoding)"; }
};

}  // namespace

std::unique_ptr<PositionEncoding> make_position_encoding(const ModelConfig& config,
                                                         const ModelWeights& weights) {
  switch (config.position) {
    case PositionKind::Rotary:
      return std::make_unique<RotaryEncoding>(config.rope_theta, config.rotary_dim, config.d_head,
                                              config.rope_pairing, config.rope_scaling);
    case PositionKind::LearnedAbsolute:
      if (!weights.pos_embed.defined()) throw Error("model has no position embedding table");
      return std::make_unique<LearnedAbsoluteEncoding>(weights.pos_embed);
    case PositionKind::None:
      break;
  }
  return std::make_unique<NoPositionEncoding>();
}

}  // namespace poslens
