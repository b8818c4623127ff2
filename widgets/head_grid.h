#pragma once
// HeadGrid: an overview of every attention head of a model as a grid of small thumbnails,
// rows = layers ("L0".."Ln"), columns = heads ("H0".."Hn"). Each thumbnail is painted from a
// QImage built once from its HeatmapData with the shared colormap (widgets/color_scale.h), so a
// 32 x 32-head model stays fast: no plotting widget per head. Scrolls by itself when the grid is
// larger than the widget. Click or arrow keys select a head (orange border, headSelected()).
#include <QAbstractScrollArea>
#include <QImage>
#include <QPixmap>
#include <QRect>
#include <QStringList>

#include <utility>
#include <vector>

#include "analysis/heatmap_data.h"

namespace poslens {

class HeadGrid : public QAbstractScrollArea {
  Q_OBJECT

 public:
  explicit HeadGrid(QWidget* parent = nullptr);
  ~HeadGrid() override;

  /// Shows `n_layers` x `n_heads` heads; `thumbnails[layer * n_heads + head]` is that head's map
  /// (any size; shown stretched to a square thumbnail, colour range autoColorRange()). Missing
  /// entries (vector too short) and empty maps are drawn as blank grey tiles. Keeps the selected
  /// head if it is still inside the grid, otherwise there is no selection; emits nothing.
  /// Counts < 1 behave like clear().
  /// Row labels, one per layer row (T5: "enc 0", "dec 0", "cross 0", …); empty: "L<n>".
  void setLayerLabels(const QStringList& labels);
  /// The label of row `layer`: its layer label or "L<layer>".
  QString layerLabel(int layer) const;
  void setHeads(int n_layers, int n_heads, std::vector<HeatmapData> thumbnails);

  /// Colours every tile by one number per head instead of its thumbnail (`values[layer *
  /// n_heads + head]`, NaN = no value, drawn grey), on one colour scale from the finite minimum
  /// to the maximum, with the value written in the tile. An empty `values` (or a size that does
  /// not match the grid) goes back to the thumbnails. Kept until the next setHeads()/clear().
  void setMetric(const QString& name, const std::vector<double>& values);
  /// The metric shown ("" while thumbnails are shown) and its colour range.
  QString metricName() const { return metric_name_; }
  std::pair<double, double> metricRange() const { return metric_range_; }

  /// Removes every head and the selection; shows a short empty-state text.
  void clear();

  /// Selects head (`layer`, `head`), scrolls it into view and emits headSelected() if the
  /// selection changed. (-1, -1) removes the selection (no signal); other indices outside the
  /// grid are ignored.
  void selectHead(int layer, int head);

  /// The selected (layer, head), or (-1, -1) when none is selected.
  std::pair<int, int> selectedHead() const { return selected_; }

  int layerCount() const { return n_layers_; }
  int headCount() const { return n_heads_; }

  /// Edge length of each square thumbnail in device-independent pixels, clamped to [16, 512].
  /// Default 64.
  void setThumbnailSize(int pixels);
  int thumbnailSize() const { return thumb_; }
  /// Picks the thumbnail size at which every head of a layer fits the viewport's width, within
  /// [`min_pixels`, `max_pixels`] (a model with many heads then scrolls horizontally).
  void fitThumbnailsToWidth(int min_pixels = 24, int max_pixels = 96);

  /// Where the thumbnail of (`layer`, `head`) is drawn, in viewport() coordinates at the current
  /// scroll position (may lie outside the visible area); an empty QRect when out of range.
  QRect thumbnailRect(int layer, int head) const;

  /// The (layer, head) whose thumbnail is under `viewport_pos` (viewport() coordinates), or
  /// (-1, -1) for the headers, the gaps and outside the grid.
  std::pair<int, int> headAt(const QPoint& viewport_pos) const;

  /// How many tiles hold a thumbnail scaled for painting: only those painted since setHeads()
  /// (the visible ones), so the cost of a paint follows the viewport, not layers x heads.
  int scaledTileCount() const;
  /// The tooltip shown at `viewport_pos`: "layer 2, head 5" over a thumbnail, else empty.
  QString toolTipAt(const QPoint& viewport_pos) const;

  QSize sizeHint() const override;

 signals:
  /// The user (click, arrow keys) or selectHead() selected head (`layer`, `head`).
  void headSelected(int layer, int head);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  bool viewportEvent(QEvent* event) override;
  void scrollContentsBy(int dx, int dy) override;

 private:
  struct Tile {
    QImage image;    ///< one pixel per cell, built once in setHeads()
    QPixmap scaled;  ///< image scaled to the thumbnail size, made on first paint / size change
  };
  QString metric_name_;
  std::vector<double> metric_;  ///< [layer * n_heads + head] while a metric is shown
  std::pair<double, double> metric_range_{0, 0};

  void paintMetricTile(QPainter& painter, const QRect& r, double value) const;
  QSize contentSize() const;
  QPoint gridOrigin() const;  ///< top-left of thumbnail (0, 0) in content coordinates
  QPoint scrollOffset() const;
  void updateScrollBars();
  const QPixmap& tilePixmap(std::size_t index);
  void paintHeaders(QPainter& painter, const QRect& visible) const;

  QStringList layer_labels_;
  int n_layers_ = 0;
  int n_heads_ = 0;
  int thumb_ = 64;
  std::vector<Tile> tiles_;
  std::pair<int, int> selected_{-1, -1};
};

}  // namespace poslens
