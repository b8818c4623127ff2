#include "core/runtime/hook_sink.h"

#include <limits>

namespace poslens {

bool is_map_hook(HookKind kind) {
  switch (kind) {
    case HookKind::AttnScores:
    case HookKind::Pattern:
    case HookKind::PosScores:
    case HookKind::CopeGates:
    case HookKind::CopePos:
      return true;
    default:
      return false;
  }
}

float masked_value(HookKind kind) {
  return kind == HookKind::AttnScores ? -std::numeric_limits<float>::infinity() : 0.0f;
}

bool SinkFanout::wants(const HookPoint& point) const {
  for (const auto* s : sinks_)
    if (s->wants(point)) return true;
  return false;
}

void SinkFanout::begin(int64_t batch, int64_t length) {
  for (auto* s : sinks_) s->begin(batch, length);
}

void SinkFanout::tensor(const HookPoint& point, const at::Tensor& value, int64_t pos_begin) {
  for (auto* s : sinks_)
    if (s->wants(point)) s->tensor(point, value, pos_begin);
}

void SinkFanout::block(const HookPoint& point, const MapBlock& block) {
  for (auto* s : sinks_)
    if (s->wants(point)) s->block(point, block);
}

bool SinkFanout::wants_attention_inputs(int layer) const {
  for (const auto* s : sinks_)
    if (s->wants_attention_inputs(layer)) return true;
  return false;
}

void SinkFanout::attention_inputs(const LayerAttentionInputs& inputs) {
  for (auto* s : sinks_)
    if (s->wants_attention_inputs(inputs.layer)) s->attention_inputs(inputs);
}

void SinkFanout::layer_done(int layer) {
  for (auto* s : sinks_) s->layer_done(layer);
}

}  // namespace poslens
