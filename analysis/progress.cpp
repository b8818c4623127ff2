#include "analysis/progress.h"

#include <algorithm>

#include "core/base/error.h"

namespace poslens {

Progress Progress::part(double begin, double width, const std::string& stage) const {
  Progress p = *this;
  p.begin_ = begin_ + width_ * begin;
  p.width_ = width_ * width;
  if (!stage.empty()) p.stage_ = stage;
  return p;
}

bool Progress::report(double within) const {
  return !report_ || report_(begin_ + width_ * std::clamp(within, 0.0, 1.0), stage_);
}

void Progress::step(int64_t done, int64_t total) const {
  if (!report(total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 0.0))
    throw Cancelled();
}

ProgressFn Progress::layers() const {
  return [p = *this](int done, int total) {
    return p.report(total > 0 ? static_cast<double>(done) / total : 0.0);
  };
}

std::function<bool(int64_t, int64_t)> Progress::counter() const {
  return [p = *this](int64_t done, int64_t total) {
    return p.report(total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 0.0);
  };
}

}  // namespace poslens
