#include "widgets/heatmap_view.h"

#include "widgets/figure_export.h"
#include "widgets/token_axis.h"

#include <qcustomplot.h>

#include <QLabel>
#include <QMouseEvent>
#include <QStackedLayout>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace poslens {
namespace {

const char* const kEmptyText = "Open a checkpoint and press Run";

QString formatValue(double v) {
  if (std::isnan(v)) return QStringLiteral("masked");
  if (std::fabs(v) >= 1e4 || (v != 0.0 && std::fabs(v) < 1e-4)) return QString::number(v, 'g', 4);
  return QString::number(v, 'f', 4);
}

QCPColorGradient sharedGradient() {
  QMap<double, QColor> stops;
  for (const auto& [pos, color] : colormapStops()) stops.insert(pos, color);
  QCPColorGradient g;
  g.setColorStops(stops);
  g.setColorInterpolation(QCPColorGradient::ciRGB);
  g.setLevelCount(256);
  g.setNanHandling(QCPColorGradient::nhNanColor);
  g.setNanColor(nanCellColor());
  return g;
}

}  // namespace

HeatmapView::HeatmapView(QWidget* parent) : QWidget(parent) {
  stack_ = new QStackedLayout(this);

  empty_label_ = new QLabel(this);
  empty_label_->setAlignment(Qt::AlignCenter);
  empty_label_->setWordWrap(true);
  QPalette hint = empty_label_->palette();  // drawn like placeholder text
  hint.setColor(QPalette::WindowText, hint.color(QPalette::PlaceholderText));
  empty_label_->setPalette(hint);
  stack_->addWidget(empty_label_);

  auto* page = new QWidget(this);
  auto* column = new QVBoxLayout(page);
  column->setContentsMargins(0, 0, 0, 0);
  column->setSpacing(2);
  plot_ = new QCustomPlot(page);
  hover_label_ = new QLabel(page);
  hover_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  hover_label_->setContentsMargins(6, 2, 6, 2);
  hover_label_->setMinimumHeight(hover_label_->fontMetrics().height() + 6);
  column->addWidget(plot_, 1);
  column->addWidget(hover_label_);
  stack_->addWidget(page);

  buildPlot();
  showEmpty(QString::fromUtf8(kEmptyText));
}

HeatmapView::~HeatmapView() = default;

void HeatmapView::buildPlot() {
  plot_->setMouseTracking(true);
  plot_->installEventFilter(this);
  plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);

  QCPAxis* x = plot_->xAxis;
  QCPAxis* y = plot_->yAxis;
  x->setLabel(QStringLiteral("key position"));
  y->setLabel(QStringLiteral("query position"));
  y->setRangeReversed(true);  // query 0 at the top, like a matrix
  x->setTickLabelRotation(-90);
  for (QCPAxis* axis : {x, y}) axis->grid()->setVisible(false);
  key_axis_ = std::make_unique<TokenAxis>(x);
  query_axis_ = std::make_unique<TokenAxis>(y);

  map_ = new QCPColorMap(x, y);
  map_->setInterpolate(false);
  map_->setTightBoundary(false);
  detail_map_ = new QCPColorMap(x, y);  // created after map_: drawn over it
  detail_map_->setInterpolate(false);
  detail_map_->setTightBoundary(false);
  detail_map_->setVisible(false);

  scale_ = new QCPColorScale(plot_);
  scale_->setType(QCPAxis::atRight);
  scale_->setRangeDrag(false);
  scale_->setRangeZoom(false);
  scale_->setBarWidth(14);
  plot_->plotLayout()->addElement(0, 1, scale_);
  map_->setColorScale(scale_);  // the map now follows the scale's gradient and range
  detail_map_->setColorScale(scale_);
  scale_->setGradient(sharedGradient());

  auto* group = new QCPMarginGroup(plot_);
  plot_->axisRect()->setMarginGroup(QCP::msTop | QCP::msBottom, group);
  scale_->setMarginGroup(QCP::msTop | QCP::msBottom, group);

  plot_->plotLayout()->insertRow(0);
  QFont title_font = font();
  title_font.setBold(true);
  title_font.setPointSizeF(title_font.pointSizeF() * 1.2);
  title_ = new QCPTextElement(plot_, QString(), title_font);
  plot_->plotLayout()->addElement(0, 0, title_);

  connect(plot_, &QCustomPlot::beforeReplot, this, &HeatmapView::updateTicks);
  connect(plot_, &QCustomPlot::afterReplot, this, &HeatmapView::onAfterReplot);
  for (QCPAxis* axis : {plot_->xAxis, plot_->yAxis})
    connect(axis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, [this] {
      if (!following_ && has_data_)
        emit viewChanged(plot_->xAxis->range().lower, plot_->xAxis->range().upper,
                         plot_->yAxis->range().lower, plot_->yAxis->range().upper);
    });
  connect(plot_, &QCustomPlot::mouseMove, this, &HeatmapView::onMouseMove);
  connect(plot_, &QCustomPlot::mouseDoubleClick, this, [this](QMouseEvent*) { resetView(); });
}

void HeatmapView::showEmpty(const QString& text) {
  has_data_ = false;
  data_ = HeatmapData{};
  key_axis_->clear();
  query_axis_->clear();
  map_->data()->clear();
  clearDetail();
  title_->setText(QString());
  setHoverCell(-1, -1);
  empty_label_->setText(text);
  stack_->setCurrentWidget(empty_label_);
}

void HeatmapView::clear() { showEmpty(QString::fromUtf8(kEmptyText)); }

bool HeatmapView::hasHeatmap() const { return has_data_; }

QString HeatmapView::emptyStateText() const { return empty_label_->text(); }

void HeatmapView::setHeatmap(const HeatmapData& data) {
  const bool sized = data.rows >= 1 && data.cols >= 1 && data.rows <= (1 << 20) &&
                     data.cols <= (1 << 20);
  if (!sized || data.values.size() < static_cast<std::size_t>(data.rows * data.cols)) {
    showEmpty(tr("Cannot show this map: %1 values for %2 x %3 cells")
                  .arg(data.values.size())
                  .arg(data.rows)
                  .arg(data.cols));
    return;
  }
  clearDetail();
  data_ = data;
  if (data_.source_rows < data_.rows) data_.source_rows = data_.rows;
  if (data_.source_cols < data_.cols) data_.source_cols = data_.cols;
  has_data_ = true;

  const int rows = static_cast<int>(data_.rows);
  const int cols = static_cast<int>(data_.cols);
  // QCPColorMapData puts the first and last cell centres on the range ends, so the range
  // [0, n-1] centres cell i on coordinate i. A single cell would have an empty range and not be
  // drawn: such a dimension is stored as two copies centred on -0.25 and +0.25 instead, which
  // covers [-0.5, 0.5] exactly like any other cell.
  const int key_cells = cols == 1 ? 2 : cols;
  const int value_cells = rows == 1 ? 2 : rows;
  QCPColorMapData* cells = map_->data();
  cells->setSize(key_cells, value_cells);
  cells->setRange(cols == 1 ? QCPRange(-0.25, 0.25) : QCPRange(0, cols - 1),
                  rows == 1 ? QCPRange(-0.25, 0.25) : QCPRange(0, rows - 1));
  for (int r = 0; r < value_cells; ++r) {
    const float* line = data_.values.data() + static_cast<std::size_t>(std::min(r, rows - 1)) * cols;
    for (int c = 0; c < key_cells; ++c)
      cells->setCell(c, r, static_cast<double>(line[std::min(c, cols - 1)]));
  }

  plot_->xAxis->setLabel(data_.col_axis.empty() ? QStringLiteral("key position") : QString::fromStdString(data_.col_axis));
  plot_->yAxis->setLabel(data_.row_axis.empty() ? QStringLiteral("query position") : QString::fromStdString(data_.row_axis));
  key_axis_->setPositions(data_.cols, data_.source_cols, data_.col_labels);
  query_axis_->setPositions(data_.rows, data_.source_rows, data_.row_labels);
  title_->setText(QString::fromStdString(data_.title));
  scale_->axis()->setLabel(QString::fromStdString(data_.value_name));
  setHoverCell(-1, -1);
  stack_->setCurrentIndex(1);
  applyColorRange();
  resetView();
}

namespace {

/// Fills `cells` with `data`'s values, centring cell i of each axis on [first, last]'s i-th
/// step; a one-cell axis is stored as two copies a quarter cell either side (QCustomPlot draws
/// nothing for an empty range).
void fillCells(QCPColorMapData* cells, const HeatmapData& data, double x0, double x1, double y0,
               double y1) {
  const int rows = static_cast<int>(data.rows), cols = static_cast<int>(data.cols);
  const int key_cells = cols == 1 ? 2 : cols;
  const int value_cells = rows == 1 ? 2 : rows;
  cells->setSize(key_cells, value_cells);
  cells->setRange(cols == 1 ? QCPRange(x0 - 0.25 * (x1 - x0 + 1), x0 + 0.25 * (x1 - x0 + 1)) : QCPRange(x0, x1),
                  rows == 1 ? QCPRange(y0 - 0.25 * (y1 - y0 + 1), y0 + 0.25 * (y1 - y0 + 1)) : QCPRange(y0, y1));
  for (int r = 0; r < value_cells; ++r) {
    const float* line = data.values.data() + static_cast<std::size_t>(std::min(r, rows - 1)) * cols;
    for (int c = 0; c < key_cells; ++c) cells->setCell(c, r, static_cast<double>(line[std::min(c, cols - 1)]));
  }
}

/// Source positions per shown cell of an axis max-pooled from `source` to `shown` cells (1 when
/// not pooled): the stride of pool_stride() in core/runtime/sinks.h.
double pooledBlock(int64_t shown, int64_t source) {
  return source > shown && shown > 0 ? static_cast<double>((source + shown - 1) / shown) : 1.0;
}

}  // namespace

double HeatmapView::coordinateOf(double p, int64_t shown, int64_t source) {
  return (p + 0.5) / pooledBlock(shown, source) - 0.5;
}

void HeatmapView::setDetail(const HeatmapData& region) {
  if (!has_data_ || region.rows < 1 || region.cols < 1 ||
      region.values.size() < static_cast<std::size_t>(region.rows * region.cols))
    return;
  detail_ = region;
  auto& d = *detail_;
  if (d.source_rows < d.rows) d.source_rows = d.rows;
  if (d.source_cols < d.cols) d.source_cols = d.cols;
  // Centre of the region's first and last cells, in the overview's cell coordinates.
  const double row_step = static_cast<double>(d.source_rows) / static_cast<double>(d.rows);
  const double col_step = static_cast<double>(d.source_cols) / static_cast<double>(d.cols);
  const auto centre = [](int64_t offset, double step, int64_t i) {
    return static_cast<double>(offset) + (static_cast<double>(i) + 0.5) * step - 0.5;
  };
  fillCells(detail_map_->data(), d,
            coordinateOf(centre(d.col_offset, col_step, 0), data_.cols, data_.source_cols),
            coordinateOf(centre(d.col_offset, col_step, d.cols - 1), data_.cols, data_.source_cols),
            coordinateOf(centre(d.row_offset, row_step, 0), data_.rows, data_.source_rows),
            coordinateOf(centre(d.row_offset, row_step, d.rows - 1), data_.rows, data_.source_rows));
  detail_map_->setVisible(true);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void HeatmapView::clearDetail() {
  detail_.reset();
  hover_detail_.reset();
  if (!detail_map_->visible()) return;
  detail_map_->setVisible(false);
  detail_map_->data()->clear();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

std::optional<HeatmapView::SourceRange> HeatmapView::visibleSource() const {
  if (!has_data_) return std::nullopt;
  const auto source_of = [](double coordinate, int64_t shown, int64_t source) {
    return std::clamp<int64_t>(static_cast<int64_t>(std::floor((coordinate + 0.5) * pooledBlock(shown, source))),
                               0, source);
  };
  const auto x = plot_->xAxis->range(), y = plot_->yAxis->range();
  SourceRange r{source_of(y.lower, data_.rows, data_.source_rows), source_of(y.upper, data_.rows, data_.source_rows),
                source_of(x.lower, data_.cols, data_.source_cols), source_of(x.upper, data_.cols, data_.source_cols)};
  if (r.q1 <= r.q0 || r.k1 <= r.k0) return std::nullopt;
  return r;
}

std::optional<std::pair<int64_t, int64_t>> HeatmapView::detailCell(double x, double y) const {
  if (!detail_) return std::nullopt;
  const auto& d = *detail_;
  // Back from overview coordinates to source positions, then to the region's cells.
  const auto source = [](double coordinate, int64_t shown, int64_t total) {
    return (coordinate + 0.5) * pooledBlock(shown, total);
  };
  const double q = source(y, data_.rows, data_.source_rows), k = source(x, data_.cols, data_.source_cols);
  const auto cell = [](double p, int64_t offset, int64_t span, int64_t cells) -> int64_t {
    return static_cast<int64_t>(std::floor((p - static_cast<double>(offset)) * static_cast<double>(cells) /
                                           static_cast<double>(span)));
  };
  const int64_t r = cell(q, d.row_offset, d.source_rows, d.rows), c = cell(k, d.col_offset, d.source_cols, d.cols);
  if (r < 0 || c < 0 || r >= d.rows || c >= d.cols) return std::nullopt;
  return std::make_pair(r, c);
}

void HeatmapView::setColorRange(double lo, double hi) {
  if (!(std::isfinite(lo) && std::isfinite(hi) && lo < hi)) return;
  fixed_range_ = ColorRange{lo, hi};
  applyColorRange();
  plot_->replot();
}

void HeatmapView::setAutoColorRange() {
  fixed_range_.reset();
  applyColorRange();
  plot_->replot();
}

ColorRange HeatmapView::colorRange() const {
  if (fixed_range_) return *fixed_range_;
  return autoColorRange(data_);
}

void HeatmapView::applyColorRange() {
  const ColorRange range = colorRange();
  map_->setDataRange(QCPRange(range.lo, range.hi));
}

void HeatmapView::resetView() {
  if (!has_data_) return;
  plot_->xAxis->setRange(-0.5, static_cast<double>(data_.cols) - 0.5);
  plot_->yAxis->setRange(-0.5, static_cast<double>(data_.rows) - 0.5);
  plot_->replot();
}

void HeatmapView::setViewRange(double x0, double x1, double y0, double y1) {
  if (!has_data_) return;
  following_ = true;
  plot_->xAxis->setRange(x0, x1);
  plot_->yAxis->setRange(y0, y1);
  plot_->replot();
  following_ = false;
}

void HeatmapView::showHover(int query, int key) {
  if (!has_data_) return;
  following_ = true;
  const bool inside = query >= 0 && key >= 0 && query < data_.rows && key < data_.cols;
  setHoverCell(inside ? query : -1, inside ? key : -1);
  following_ = false;
}

// Axis length to assume before the first layout gave the axis rect a size.
int HeatmapView::fallbackAxisPixels(const QCPAxis* axis) const {
  // A view never shown (the CLI's offscreen figures) has a plot of default size but its own
  // resized size: take the larger.
  const int widget = axis->orientation() == Qt::Horizontal ? std::max(plot_->width(), width())
                                                           : std::max(plot_->height(), height());
  return std::max(widget - 120, 50);
}

// Called before every replot: label the cells that are visible, every k-th when crowded.
void HeatmapView::updateTicks() {
  key_axis_->updateTicks(fallbackAxisPixels(plot_->xAxis));
  query_axis_->updateTicks(fallbackAxisPixels(plot_->yAxis));
}

// After a resize the step chosen before the layout may no longer fit: replot once more.
void HeatmapView::onAfterReplot() {
  if (!has_data_) return;
  const int kx = key_axis_->desiredStep(fallbackAxisPixels(plot_->xAxis));
  const int ky = query_axis_->desiredStep(fallbackAxisPixels(plot_->yAxis));
  if ((kx != key_axis_->step() || ky != query_axis_->step()) && relayout_guard_ < 3) {
    ++relayout_guard_;
    plot_->replot(QCustomPlot::rpQueuedReplot);
  } else {
    relayout_guard_ = 0;
  }
}

bool HeatmapView::eventFilter(QObject* watched, QEvent* event) {
  if (watched == plot_ && event->type() == QEvent::Leave) setHoverCell(-1, -1);
  return QWidget::eventFilter(watched, event);
}

void HeatmapView::onMouseMove(QMouseEvent* event) {
  if (!has_data_) return;
  const QPointF p = event->position();
  if (!plot_->axisRect()->rect().contains(p.toPoint())) {
    setHoverCell(-1, -1);
    return;
  }
  const double x = plot_->xAxis->pixelToCoord(p.x()), y = plot_->yAxis->pixelToCoord(p.y());
  const auto col = static_cast<int64_t>(std::floor(x + 0.5));
  const auto row = static_cast<int64_t>(std::floor(y + 0.5));
  if (row < 0 || col < 0 || row >= data_.rows || col >= data_.cols) {
    setHoverCell(-1, -1);
    return;
  }
  const auto detail = detailCell(x, y);
  if (detail != hover_detail_) {
    hover_detail_ = detail;
    hover_row_ = hover_col_ = -2;  // the read-out changes even within one overview cell
  }
  setHoverCell(static_cast<int>(row), static_cast<int>(col));
}

void HeatmapView::setHoverCell(int row, int col) {
  if (row == hover_row_ && col == hover_col_) return;
  hover_row_ = row;
  hover_col_ = col;
  if (row < 0 || col < 0) {
    hover_detail_.reset();
    hover_label_->clear();
    return;
  }
  hover_label_->setText(describeCell(row, col));
  if (!following_) emit hovered(row, col, static_cast<double>(data_.at(row, col)));
}

QString HeatmapView::describeCell(int row, int col) const {
  if (hover_detail_ && detail_) {  // inside the region recomputed at full resolution
    const auto& d = *detail_;
    const auto [r, c] = *hover_detail_;
    const auto position = [](int64_t i, int64_t cells, int64_t span, int64_t offset,
                             const std::vector<std::string>& labels) {
      const auto [first, last] = sourceBlock(i, cells, span);
      if (first != last) return QStringLiteral("%1\u2013%2").arg(offset + first).arg(offset + last);
      QString text = QString::number(offset + i);
      if (i < static_cast<int64_t>(labels.size()))
        text += QStringLiteral(" '%1'").arg(displayToken(labels[static_cast<std::size_t>(i)]));
      return text;
    };
    return QStringLiteral("query %1 \u2192 key %2: %3")
        .arg(position(r, d.rows, d.source_rows, d.row_offset, d.row_labels),
             position(c, d.cols, d.source_cols, d.col_offset, d.col_labels),
             formatValue(static_cast<double>(d.at(r, c))));
  }
  auto position = [this](int64_t i, int64_t shown, int64_t source,
                         const std::vector<std::string>& labels) {
    const auto [first, last] = sourceBlock(i, shown, source);
    if (first != last) return QStringLiteral("%1\u2013%2").arg(first).arg(last);
    if (shown != source || i >= static_cast<int64_t>(labels.size())) return QString::number(i);
    QString text = QStringLiteral("%1 '%2'").arg(i).arg(displayToken(labels[static_cast<std::size_t>(i)]));
    // The token's id and raw piece, when the map carries them (tokenizer views).
    if (i < static_cast<int64_t>(data_.token_ids.size()) &&
        i < static_cast<int64_t>(data_.token_pieces.size()))
      text += QStringLiteral(" [id %1, piece '%2']")
                  .arg(data_.token_ids[static_cast<std::size_t>(i)])
                  .arg(displayToken(data_.token_pieces[static_cast<std::size_t>(i)]));
    return text;
  };
  return QStringLiteral("query %1 \u2192 key %2: %3")
      .arg(position(row, data_.rows, data_.source_rows, data_.row_labels),
           position(col, data_.cols, data_.source_cols, data_.col_labels),
           formatValue(static_cast<double>(data_.at(row, col))));
}

QString HeatmapView::hoverText() const { return hover_label_->text(); }

QWidget* HeatmapView::plotWidget() const { return plot_; }

std::optional<QPoint> HeatmapView::cellCenter(int query, int key) const {
  if (!has_data_ || query < 0 || key < 0 || query >= data_.rows || key >= data_.cols)
    return std::nullopt;
  return QPoint(static_cast<int>(std::lround(plot_->xAxis->coordToPixel(key))),
                static_cast<int>(std::lround(plot_->yAxis->coordToPixel(query))));
}

QStringList HeatmapView::keyTickLabels() const {
  const auto labels = plot_->xAxis->tickVectorLabels();
  return QStringList(labels.begin(), labels.end());
}

QStringList HeatmapView::queryTickLabels() const {
  const auto labels = plot_->yAxis->tickVectorLabels();
  return QStringList(labels.begin(), labels.end());
}

bool HeatmapView::exportFigure(const QString& path, FigureFormat format, QString* error,
                               int width, int height) {
  const QString kind = figureSuffix(format).toUpper();
  if (!has_data_) {
    if (error) *error = tr("Cannot export %1 '%2': no heatmap is shown").arg(kind, path);
    return false;
  }
  return exportPlot(*plot_, path, format, width, height, QString::fromStdString(data_.title),
                    error);
}

bool HeatmapView::exportPng(const QString& path, int width, int height, QString* error) {
  return exportFigure(path, FigureFormat::Png, error, width, height);
}

bool HeatmapView::exportPdf(const QString& path, QString* error, int width, int height) {
  return exportFigure(path, FigureFormat::Pdf, error, width, height);
}

namespace {

/// "position:token" of cell `index` of an axis with `cells` cells over `source` positions (a
/// pooled cell is named by its block's first position).
QString axisName(int64_t index, int64_t cells, int64_t source, const std::vector<std::string>& labels) {
  const int64_t position = sourceBlock(index, cells, source).first;
  QString name = QString::number(position);
  if (position < static_cast<int64_t>(labels.size()))
    name += QLatin1Char(':') + QString::fromStdString(labels[static_cast<size_t>(position)]);
  return csvField(name);
}

}  // namespace

QString HeatmapView::csv() const {
  if (!has_data_) return {};
  QString out = QStringLiteral("query \\ key");
  for (int64_t c = 0; c < data_.cols; ++c)
    out += QLatin1Char(',') + axisName(c, data_.cols, data_.source_cols, data_.col_labels);
  out += QLatin1Char('\n');
  for (int64_t r = 0; r < data_.rows; ++r) {
    out += axisName(r, data_.rows, data_.source_rows, data_.row_labels);
    for (int64_t c = 0; c < data_.cols; ++c) {
      out += QLatin1Char(',');
      const float v = data_.at(r, c);
      if (std::isfinite(v)) out += QString::number(v, 'g', 7);
    }
    out += QLatin1Char('\n');
  }
  return out;
}

bool HeatmapView::exportCsv(const QString& path, QString* error) const {
  if (!has_data_) {
    if (error) *error = tr("Cannot export CSV '%1': no heatmap is shown").arg(path);
    return false;
  }
  return writeTextAtomically(path, QStringLiteral("CSV"), csv(), error);
}

}  // namespace poslens
