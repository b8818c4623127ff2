#pragma once
// −ln p(next token) at each position, summed from the logits as a forward pass streams them in
// chunks of positions (hook "logits", hook_sink.h): nothing of size T × vocab is kept. Used by
// the loss per position (length_loss.h) and the needle sweep (needle_sweep.h).
#include <utility>

#include <ATen/core/Tensor.h>

#include "core/runtime/hook_sink.h"

namespace poslens {

class NextTokenLoss : public HookSink {
 public:
  /// `targets`: int64 [n], the token each position 0..n−1 should predict (the input shifted by
  /// one); `sums`: float64 CPU [n], to which −ln p(targets[i] | positions ≤ i) (nats) is added
  /// at each i. Positions past n (the last one) are ignored.
  NextTokenLoss(at::Tensor targets, at::Tensor& sums) : targets_(std::move(targets)), sums_(sums) {}
  bool wants(const HookPoint& point) const override { return point.kind == HookKind::Logits; }
  void tensor(const HookPoint& point, const at::Tensor& logits, int64_t pos_begin) override;

 private:
  at::Tensor targets_;
  at::Tensor& sums_;
};

}  // namespace poslens
