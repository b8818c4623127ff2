#include "analysis/position_offset.h"

#include <torch/torch.h>

#include "core/base/error.h"
#include "core/runtime/sinks.h"

namespace poslens {

OffsetEffect position_offset_effect(const LoadedModel& model, const std::vector<int64_t>& ids, int64_t offset,
                                    int layer, int head, int64_t cells, const Progress& progress) {
  const auto& c = model.model->config();
  if (offset < 0) throw Error("the position offset must be ≥ 0, got " + std::to_string(offset));
  if (layer < 0 || layer >= c.n_layers || head < 0 || head >= c.n_heads)
    throw Error("the model has " + std::to_string(c.n_layers) + " layers of " + std::to_string(c.n_heads) +
                " heads, got layer " + std::to_string(layer) + " head " + std::to_string(head));
  const HookPoint point{HookKind::Pattern, layer};
  const CaptureSpec spec({point.name()});
  const HeadSelection selection = {{layer, head}};
  PooledMapSink before(spec, cells, selection), after(spec, cells, selection);
  OffsetEffect out;
  out.offset = offset;
  out.layer = layer;
  out.head = head;
  DivergencePasses passes;
  passes.b_offset = offset;
  passes.a_extra = &before;
  passes.b_extra = &after;
  out.divergence = compute_pattern_divergence(model, model, ids, progress, passes);
  out.pattern = before.maps().at(0).second[0][0];
  out.shifted = after.maps().at(0).second[0][0];
  return out;
}

}  // namespace poslens
