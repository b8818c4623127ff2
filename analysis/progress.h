#pragma once
// Progress of one job as a fraction of the whole (0 to 1), with weighted parts: a job made of
// stages (a forward pass, then the probe's samples, then writing) hands each stage a part of
// the range, so one bar runs once from 0 to 100 % instead of restarting per stage. Cancelling
// is the report function returning false; step() then throws poslens::Cancelled.
#include <cstdint>
#include <functional>
#include <string>

#include "core/runtime/transformer.h"

namespace poslens {

class Progress {
 public:
  /// Gets the fraction done of the whole job and the current stage's name; returns false to
  /// cancel.
  using Report = std::function<bool(double fraction, const std::string& stage)>;

  Progress() = default;
  explicit Progress(Report report) : report_(std::move(report)) {}

  /// The part [begin, begin + width) of this range (fractions of it), named `stage` (empty:
  /// this range's name).
  Progress part(double begin, double width, const std::string& stage = {}) const;
  /// Reports `done` of `total` units of this range. Throws poslens::Cancelled when cancelled.
  void step(int64_t done, int64_t total) const;

  /// The same as the callbacks the forward pass (layers) and the probe (samples) take; they
  /// return false when cancelled, and their callers throw poslens::Cancelled.
  ProgressFn layers() const;
  std::function<bool(int64_t, int64_t)> counter() const;

 private:
  bool report(double within) const;
  Report report_;
  double begin_ = 0.0, width_ = 1.0;
  std::string stage_;
};

}  // namespace poslens
