#include "widgets/head_grid.h"

#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QToolTip>

#include <algorithm>
#include <cmath>
#include <limits>

#include "widgets/color_scale.h"

namespace poslens {
namespace {

constexpr int kMargin = 6;  // around the whole grid
constexpr int kGap = 8;     // between thumbnails; the selection border is drawn inside it
const QColor kSelectionColor(255, 90, 20);  // orange: not part of the viridis ramp
const QColor kMissingTileColor(236, 236, 236);

}  // namespace

HeadGrid::HeadGrid(QWidget* parent) : QAbstractScrollArea(parent) {
  setFocusPolicy(Qt::StrongFocus);
  viewport()->setBackgroundRole(QPalette::Base);
  viewport()->setAutoFillBackground(true);
  updateScrollBars();
}

HeadGrid::~HeadGrid() = default;

void HeadGrid::setLayerLabels(const QStringList& labels) {
  layer_labels_ = labels;
  updateGeometry();
  viewport()->update();
}

QString HeadGrid::layerLabel(int layer) const {
  return layer >= 0 && layer < layer_labels_.size() ? layer_labels_[layer] : QStringLiteral("L%1").arg(layer);
}

void HeadGrid::setHeads(int n_layers, int n_heads, std::vector<HeatmapData> thumbnails) {
  if (n_layers < 1 || n_heads < 1) {
    clear();
    return;
  }
  n_layers_ = n_layers;
  n_heads_ = n_heads;
  metric_name_.clear();
  metric_.clear();
  const auto count = static_cast<std::size_t>(n_layers) * static_cast<std::size_t>(n_heads);
  tiles_.assign(count, Tile{});
  for (std::size_t i = 0; i < count && i < thumbnails.size(); ++i)
    tiles_[i].image = heatmapImage(thumbnails[i], autoColorRange(thumbnails[i]));
  if (selected_.first >= n_layers_ || selected_.second >= n_heads_) selected_ = {-1, -1};
  updateScrollBars();
  updateGeometry();
  viewport()->update();
}

void HeadGrid::setMetric(const QString& name, const std::vector<double>& values) {
  const auto count = static_cast<std::size_t>(n_layers_) * static_cast<std::size_t>(n_heads_);
  metric_name_.clear();
  metric_.clear();
  if (!values.empty() && values.size() == count) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (double v : values)
      if (std::isfinite(v)) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    metric_name_ = name;
    metric_ = values;
    metric_range_ = std::isfinite(lo) ? std::make_pair(lo, hi) : std::make_pair(0.0, 0.0);
  }
  viewport()->update();
}

void HeadGrid::clear() {
  metric_name_.clear();
  metric_.clear();
  n_layers_ = n_heads_ = 0;
  tiles_.clear();
  selected_ = {-1, -1};
  updateScrollBars();
  updateGeometry();
  viewport()->update();
}

void HeadGrid::setThumbnailSize(int pixels) {
  const int t = std::clamp(pixels, 16, 512);
  if (t == thumb_) return;
  thumb_ = t;
  updateScrollBars();
  updateGeometry();
  viewport()->update();
}

void HeadGrid::fitThumbnailsToWidth(int min_pixels, int max_pixels) {
  if (n_heads_ < 1) return;
  const int available = viewport()->width() - gridOrigin().x() - kMargin;
  const int fitted = (available + kGap) / n_heads_ - kGap;
  setThumbnailSize(std::clamp(fitted, min_pixels, std::max(min_pixels, max_pixels)));
}

void HeadGrid::selectHead(int layer, int head) {
  if (layer == -1 && head == -1) {
    selected_ = {-1, -1};
    viewport()->update();
    return;
  }
  if (layer < 0 || head < 0 || layer >= n_layers_ || head >= n_heads_) return;
  const std::pair<int, int> next{layer, head};
  // Scroll the tile (with its border) into view.
  const QRect r = thumbnailRect(layer, head).adjusted(-kGap, -kGap, kGap, kGap);
  const QRect vp = viewport()->rect();
  if (r.left() < 0) horizontalScrollBar()->setValue(horizontalScrollBar()->value() + r.left());
  else if (r.right() > vp.right())
    horizontalScrollBar()->setValue(horizontalScrollBar()->value() + r.right() - vp.right());
  if (r.top() < 0) verticalScrollBar()->setValue(verticalScrollBar()->value() + r.top());
  else if (r.bottom() > vp.bottom())
    verticalScrollBar()->setValue(verticalScrollBar()->value() + r.bottom() - vp.bottom());
  if (next == selected_) return;
  selected_ = next;
  viewport()->update();
  emit headSelected(layer, head);
}

QPoint HeadGrid::gridOrigin() const {
  const QFontMetrics fm(font());
  // Measured in bold: the selected row's label is drawn bold and must not be clipped.
  QFont bold = font();
  bold.setBold(true);
  const QFontMetrics bold_fm(bold);
  int widest = bold_fm.horizontalAdvance(layerLabel(std::max(n_layers_ - 1, 0)));
  for (const auto& label : layer_labels_) widest = std::max(widest, bold_fm.horizontalAdvance(label));
  const int header_w = widest + 8;
  const int header_h = fm.height() + 4;
  return {kMargin + header_w, kMargin + header_h};
}

QSize HeadGrid::contentSize() const {
  if (n_layers_ < 1 || n_heads_ < 1) return {0, 0};
  const QPoint o = gridOrigin();
  return {o.x() + n_heads_ * (thumb_ + kGap) - kGap + kMargin,
          o.y() + n_layers_ * (thumb_ + kGap) - kGap + kMargin};
}

QPoint HeadGrid::scrollOffset() const {
  return {horizontalScrollBar()->value(), verticalScrollBar()->value()};
}

QSize HeadGrid::sizeHint() const {
  const QSize content = contentSize();
  if (content.isEmpty()) return {320, 240};
  const int frame = 2 * frameWidth();
  return QSize(content.width() + frame, content.height() + frame).boundedTo(QSize(900, 700));
}

void HeadGrid::updateScrollBars() {
  const QSize content = contentSize();
  const QSize vp = viewport()->size();
  horizontalScrollBar()->setRange(0, std::max(0, content.width() - vp.width()));
  verticalScrollBar()->setRange(0, std::max(0, content.height() - vp.height()));
  horizontalScrollBar()->setPageStep(vp.width());
  verticalScrollBar()->setPageStep(vp.height());
  horizontalScrollBar()->setSingleStep(thumb_ + kGap);
  verticalScrollBar()->setSingleStep(thumb_ + kGap);
}

QRect HeadGrid::thumbnailRect(int layer, int head) const {
  if (layer < 0 || head < 0 || layer >= n_layers_ || head >= n_heads_) return {};
  const QPoint o = gridOrigin() - scrollOffset();
  return {o.x() + head * (thumb_ + kGap), o.y() + layer * (thumb_ + kGap), thumb_, thumb_};
}

std::pair<int, int> HeadGrid::headAt(const QPoint& viewport_pos) const {
  const QPoint rel = viewport_pos + scrollOffset() - gridOrigin();
  if (rel.x() < 0 || rel.y() < 0) return {-1, -1};
  const int pitch = thumb_ + kGap;
  if (rel.x() % pitch >= thumb_ || rel.y() % pitch >= thumb_) return {-1, -1};
  const int layer = rel.y() / pitch;
  const int head = rel.x() / pitch;
  if (layer >= n_layers_ || head >= n_heads_) return {-1, -1};
  return {layer, head};
}

QString HeadGrid::toolTipAt(const QPoint& viewport_pos) const {
  const auto [layer, head] = headAt(viewport_pos);
  if (layer < 0) return {};
  return layer_labels_.isEmpty() ? tr("layer %1, head %2").arg(layer).arg(head)
                                 : tr("%1, head %2").arg(layerLabel(layer)).arg(head);
}

int HeadGrid::scaledTileCount() const {
  return static_cast<int>(std::count_if(tiles_.begin(), tiles_.end(),
                                        [](const Tile& t) { return !t.scaled.isNull(); }));
}

const QPixmap& HeadGrid::tilePixmap(std::size_t index) {
  Tile& tile = tiles_[index];
  const qreal dpr = devicePixelRatioF();
  const int px = static_cast<int>(thumb_ * dpr + 0.5);
  if (!tile.image.isNull() && tile.scaled.size() != QSize(px, px)) {
    // Shrinking averages cells; enlarging keeps cells crisp squares.
    const bool shrink = tile.image.width() > px || tile.image.height() > px;
    tile.scaled = QPixmap::fromImage(tile.image.scaled(
        px, px, Qt::IgnoreAspectRatio, shrink ? Qt::SmoothTransformation : Qt::FastTransformation));
    tile.scaled.setDevicePixelRatio(dpr);
  }
  return tile.scaled;
}

void HeadGrid::paintEvent(QPaintEvent* event) {
  QPainter painter(viewport());
  if (n_layers_ < 1 || n_heads_ < 1) {
    painter.setPen(palette().color(QPalette::Disabled, QPalette::Text));
    painter.drawText(viewport()->rect(), Qt::AlignCenter | Qt::TextWordWrap,
                     tr("Open a checkpoint and press Run to see every head"));
    return;
  }
  const QRect visible = event->rect();
  paintHeaders(painter, visible);
  const QColor frame = palette().color(QPalette::Mid);
  for (int layer = 0; layer < n_layers_; ++layer) {
    for (int head = 0; head < n_heads_; ++head) {
      const QRect r = thumbnailRect(layer, head);
      if (!r.adjusted(-kGap, -kGap, kGap, kGap).intersects(visible)) continue;
      const auto index = static_cast<std::size_t>(layer) * n_heads_ + head;
      if (!metric_.empty()) {
        paintMetricTile(painter, r, metric_[index]);
      } else {
        const QPixmap& pixmap = tilePixmap(index);
        if (pixmap.isNull()) painter.fillRect(r, kMissingTileColor);
        else painter.drawPixmap(r.topLeft(), pixmap);
      }
      painter.setPen(frame);
      painter.drawRect(QRectF(r).adjusted(-0.5, -0.5, 0.5, 0.5));
    }
  }
  if (selected_.first >= 0) {
    const QRectF r = QRectF(thumbnailRect(selected_.first, selected_.second));
    painter.setPen(QPen(kSelectionColor, 3));
    painter.setBrush(Qt::NoBrush);
    painter.drawRect(r.adjusted(-2.5, -2.5, 2.5, 2.5));
  }
}

void HeadGrid::paintMetricTile(QPainter& painter, const QRect& r, double value) const {
  if (!std::isfinite(value)) {
    painter.fillRect(r, kMissingTileColor);
    return;
  }
  // The heatmaps' colour ramp over the metric's range shared by every head.
  const auto [lo, hi] = metric_range_;
  const QColor colour = QColor::fromRgb(colormapColor(hi > lo ? (value - lo) / (hi - lo) : 0.5));
  painter.fillRect(r, colour);
  if (thumb_ >= 32) {
    painter.setPen(colour.lightnessF() > 0.55 ? Qt::black : Qt::white);
    painter.drawText(r, Qt::AlignCenter, QString::number(value, 'g', 3));
  }
}

void HeadGrid::paintHeaders(QPainter& painter, const QRect& visible) const {
  const QFontMetrics fm(font());
  const QPoint o = gridOrigin() - scrollOffset();
  QFont bold = font();
  bold.setBold(true);
  const QColor text = palette().color(QPalette::Text);
  auto draw = [&](const QRect& box, int flags, const QString& label, bool selected) {
    if (!box.intersects(visible)) return;
    painter.setFont(selected ? bold : font());
    painter.setPen(selected ? kSelectionColor : text);
    painter.drawText(box, flags, label);
  };
  for (int head = 0; head < n_heads_; ++head) {
    const QRect box(o.x() + head * (thumb_ + kGap), o.y() - fm.height() - 4, thumb_,
                    fm.height() + 2);
    draw(box, Qt::AlignHCenter | Qt::AlignBottom, QStringLiteral("H%1").arg(head),
         head == selected_.second);
  }
  for (int layer = 0; layer < n_layers_; ++layer) {
    const QRect box(o.x() - gridOrigin().x() + kMargin, o.y() + layer * (thumb_ + kGap),
                    gridOrigin().x() - kMargin - 6, thumb_);
    draw(box, Qt::AlignRight | Qt::AlignVCenter, layerLabel(layer),
         layer == selected_.first);
  }
  painter.setFont(font());
}

void HeadGrid::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return QAbstractScrollArea::mousePressEvent(event);
  setFocus(Qt::MouseFocusReason);
  const auto [layer, head] = headAt(event->position().toPoint());
  if (layer >= 0) selectHead(layer, head);
}

void HeadGrid::keyPressEvent(QKeyEvent* event) {
  int dl = 0, dh = 0;
  switch (event->key()) {
    case Qt::Key_Left: dh = -1; break;
    case Qt::Key_Right: dh = 1; break;
    case Qt::Key_Up: dl = -1; break;
    case Qt::Key_Down: dl = 1; break;
    default: return QAbstractScrollArea::keyPressEvent(event);
  }
  if (n_layers_ < 1) return;
  if (selected_.first < 0) {
    selectHead(0, 0);
  } else {
    selectHead(std::clamp(selected_.first + dl, 0, n_layers_ - 1),
               std::clamp(selected_.second + dh, 0, n_heads_ - 1));
  }
  event->accept();
}

void HeadGrid::resizeEvent(QResizeEvent* event) {
  QAbstractScrollArea::resizeEvent(event);
  updateScrollBars();
}

void HeadGrid::scrollContentsBy(int, int) { viewport()->update(); }

bool HeadGrid::viewportEvent(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const auto [layer, head] = headAt(help->pos());
    if (layer >= 0) {
      QToolTip::showText(help->globalPos(), toolTipAt(help->pos()), viewport(),
                         thumbnailRect(layer, head));
    } else {
      QToolTip::hideText();
      event->ignore();
    }
    return true;
  }
  return QAbstractScrollArea::viewportEvent(event);
}

}  // namespace poslens
