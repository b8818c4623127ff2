#include "widgets/token_axis.h"

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>

namespace poslens {
namespace {

constexpr int kMaxTickLabelChars = 12;

QString shortened(const QString& s) {
  if (s.size() <= kMaxTickLabelChars) return s;
  return s.left(kMaxTickLabelChars - 1) + QChar(0x2026);
}

}  // namespace

QString displayToken(const std::string& token) {
  QString s = QString::fromStdString(token);
  s.replace('\n', QStringLiteral("\\n"));
  s.replace('\r', QStringLiteral("\\r"));
  s.replace('\t', QStringLiteral("\\t"));
  return s;
}

std::pair<int64_t, int64_t> sourceBlock(int64_t i, int64_t shown, int64_t source) {
  if (source <= shown || shown <= 0) return {i, i};
  const int64_t block = (source + shown - 1) / shown;
  return {i * block, std::min((i + 1) * block, source) - 1};
}

int niceTickStep(double min_step) {
  if (!(min_step > 1.0)) return 1;
  for (long base = 1; base < (1L << 30); base *= 10)
    for (int m : {1, 2, 5})
      if (m * base >= min_step) return static_cast<int>(m * base);
  return 1 << 30;
}

TokenAxis::TokenAxis(QCPAxis* axis) : axis_(axis) {
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  ticker->setSubTickCount(0);
  axis_->setTicker(ticker);
  axis_->setSubTicks(false);
}

void TokenAxis::setPositions(int64_t shown, int64_t source, std::vector<std::string> labels) {
  shown_ = shown;
  source_ = std::max(source, shown);
  labels_ = std::move(labels);
}

void TokenAxis::clear() { setPositions(0, 0, {}); }

// One text line apart (x labels are rotated, so this holds for both axes).
int TokenAxis::desiredStep(int fallback_px) const {
  const QRect r = axis_->axisRect()->rect();
  double px = axis_->orientation() == Qt::Horizontal ? r.width() : r.height();
  if (px < 20) px = fallback_px;
  const double cells = std::max(axis_->range().size(), 1.0);
  const double line = QFontMetricsF(axis_->tickLabelFont()).height() * 1.15;
  return niceTickStep(line / (px / cells));
}

void TokenAxis::updateTicks(int fallback_px) {
  auto* ticker = static_cast<QCPAxisTickerText*>(axis_->ticker().data());
  ticker->clear();
  if (shown_ < 1) return;
  step_ = desiredStep(fallback_px);
  const QCPRange range = axis_->range();
  const int64_t first = std::max<int64_t>(0, static_cast<int64_t>(std::ceil(range.lower)));
  const int64_t last = std::min<int64_t>(shown_ - 1, static_cast<int64_t>(std::floor(range.upper)));
  const bool pooled = shown_ != source_;
  QMap<double, QString> ticks;
  for (int64_t i = (first + step_ - 1) / step_ * step_; i <= last; i += step_) {
    QString text;
    if (pooled) {
      text = QString::number(sourceBlock(i, shown_, source_).first);
    } else if (i < static_cast<int64_t>(labels_.size())) {
      const QString token = shortened(displayToken(labels_[static_cast<std::size_t>(i)]));
      // Thinned labels carry the index too: a lone token says little about where it is.
      text = step_ == 1 ? token : QStringLiteral("%1 %2").arg(i).arg(token.trimmed());
    } else {
      text = QString::number(i);
    }
    ticks.insert(static_cast<double>(i), text);
  }
  ticker->setTicks(ticks);
}

}  // namespace poslens
