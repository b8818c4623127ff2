#pragma once
// HeatmapView: the large view of one 2-D map (usually one attention head's pattern) drawn with
// QCustomPlot. Key position on x, query position on y with query 0 at the top, like a matrix;
// each cell is centred on its integer (key, query) coordinate. Colours come from the shared
// colormap (widgets/color_scale.h); masked cells (NaN) are light grey. A colour scale sits to the
// right, the map's title above, a hover read-out below. Drag pans, the wheel zooms, a double
// click (or resetView()) shows the whole map again.
//
// Takes plain value types only (analysis/heatmap_data.h); QCustomPlot stays inside the .cpp.
#include <QString>
#include <QStringList>
#include <QWidget>

#include <memory>
#include <optional>

#include "analysis/heatmap_data.h"
#include "widgets/color_scale.h"
#include "widgets/figure_export.h"

class QCustomPlot;
class QCPAxis;
class QCPColorMap;
class QCPColorScale;
class QCPTextElement;
class QLabel;
class QMouseEvent;
class QStackedLayout;

namespace poslens {

class TokenAxis;

class HeatmapView : public QWidget {
  Q_OBJECT

 public:
  explicit HeatmapView(QWidget* parent = nullptr);
  ~HeatmapView() override;

  /// Shows `data` (a copy is kept for the hover read-out) and resets the view to the whole map.
  /// The colour range is kept if one was set with setColorRange(), otherwise it is the automatic
  /// one (see setAutoColorRange()). Axis ticks: token texts (data.row_labels / col_labels, one per
  /// source position) when the map is not pooled and labels are given, otherwise position
  /// indices (for a pooled map: the first source position of each block). Every k-th tick is
  /// labelled when the cells are too small for one label each (k grows with zoom-out).
  /// An empty map (rows or cols < 1) or one with fewer than rows*cols values shows clear()'s
  /// empty state instead, with a message saying why.
  void setHeatmap(const HeatmapData& data);

  /// Removes the map and shows the empty-state text ("Open a checkpoint and press Run").
  void clear();

  /// Draws `region` — rows [row_offset, row_offset + source_rows) × keys [col_offset, ...) of
  /// the shown map's source positions, at its own resolution (HeatmapData::row_offset) — over
  /// the shown (pooled) map, so zooming into a long map shows its cells exactly; the hover
  /// read-out inside the region reads the region. Ignored when nothing is shown. setHeatmap()
  /// and clearDetail() remove it.
  void setDetail(const HeatmapData& region);
  void clearDetail();
  /// The region drawn by setDetail(), if any.
  const std::optional<HeatmapData>& detail() const { return detail_; }
  /// The source positions the view shows now: [first query, last query] × [first key, last
  /// key] (clamped to the map), e.g. to ask for that region at full resolution.
  struct SourceRange {
    int64_t q0, q1, k0, k1;  ///< rows [q0, q1), keys [k0, k1)
  };
  std::optional<SourceRange> visibleSource() const;

  /// True while a map is shown (after a valid setHeatmap(), until clear()).
  bool hasHeatmap() const;

  /// The map currently shown (empty HeatmapData when none).
  const HeatmapData& heatmap() const { return data_; }

  /// Fixes the colour range: values <= lo get the first colour, values >= hi the last. Stays in
  /// force across setHeatmap() until setAutoColorRange(). Ignored unless lo < hi (both finite).
  void setColorRange(double lo, double hi);

  /// Back to the automatic colour range, chosen by the map's HeatmapData::kind
  /// (autoColorRange(): [0, 1] for probabilities and gates, else from the data).
  void setAutoColorRange();

  /// The colour range in use now.
  ColorRange colorRange() const;

  /// Writes the plot (title, map, colour scale; not the hover line) as `format` (PNG pixels,
  /// PDF/SVG points) of `width` x `height` (0 = the widget's current size, or 800 x 700 before
  /// the first layout) through widgets/figure_export.h: a temporary file renamed over `path`,
  /// so a failed export leaves no file. Returns false and sets `*error` (if non-null) to a
  /// message naming the path when nothing is shown or writing fails.
  bool exportFigure(const QString& path, FigureFormat format, QString* error, int width = 0,
                    int height = 0);

  /// exportFigure() as PNG.
  bool exportPng(const QString& path, int width, int height, QString* error);

  /// exportFigure() as a vector PDF page.
  bool exportPdf(const QString& path, QString* error, int width = 0, int height = 0);

  /// The map shown as CSV text: a header row `query \ key` then one column per key, one row per
  /// query, each row and column named `position:token` (the block's first position when
  /// pooled); masked cells are empty. Empty text when nothing is shown.
  QString csv() const;
  /// Writes csv() to `path` atomically; false with `*error` set when nothing is shown or
  /// writing fails.
  bool exportCsv(const QString& path, QString* error) const;

  /// The plot itself, for figures that put several views side by side (figure_export.h).
  QCustomPlot* plot() const { return plot_; }

  // --- Inspection (tests, screenshots, the main window's status bar) -----------------------

  /// Tick labels drawn on the key (x) / query (y) axis at the last replot, in axis order.
  QStringList keyTickLabels() const;
  QStringList queryTickLabels() const;

  /// The text of the hover read-out line below the plot (empty when not over a cell).
  QString hoverText() const;

  /// The text of the empty state (meaningful while !hasHeatmap()).
  QString emptyStateText() const;

  /// The QCustomPlot child that receives mouse events; for tests that send events.
  QWidget* plotWidget() const;

  /// Centre of the cell (row `query`, col `key`) of the shown map in plotWidget() pixel
  /// coordinates, as of the current axis ranges and layout; nullopt when out of range or empty.
  std::optional<QPoint> cellCenter(int query, int key) const;

 public slots:
  /// Shows the whole map again (after zoom or pan).
  void resetView();
  /// Shows key range [x0, x1] and query range [y0, y1] (cell coordinates), e.g. to follow a
  /// linked view's zoom; emits no viewChanged().
  void setViewRange(double x0, double x1, double y0, double y1);
  /// Shows the read-out for cell (query, key) as if the mouse were over it (a linked view's
  /// hover); emits no hovered(). (-1, -1) clears it.
  void showHover(int query, int key);

 signals:
  /// The mouse is over cell (row `query`, col `key`) of the shown map, whose value is `value`
  /// (NaN for a masked cell). For a pooled map these are cell indices, not source positions
  /// (the read-out line shows the source range). Emitted when the hovered cell changes.
  void hovered(int query, int key, double value);
  /// The user zoomed or panned: the key range [x0, x1] and query range [y0, y1] now shown.
  void viewChanged(double x0, double x1, double y0, double y1);

 private:
  bool eventFilter(QObject* watched, QEvent* event) override;
  void buildPlot();
  void showEmpty(const QString& text);
  void applyColorRange();
  void updateTicks();
  int fallbackAxisPixels(const QCPAxis* axis) const;
  void onAfterReplot();
  void onMouseMove(QMouseEvent* event);
  void setHoverCell(int row, int col);
  QString describeCell(int row, int col) const;
  /// The detail cell under overview coordinate (x, y), or nullopt outside the detail.
  std::optional<std::pair<int64_t, int64_t>> detailCell(double x, double y) const;
  /// Overview coordinate of source position `p` on an axis of `shown` cells over `source`.
  static double coordinateOf(double p, int64_t shown, int64_t source);

  HeatmapData data_;
  bool has_data_ = false;
  std::optional<ColorRange> fixed_range_;
  std::unique_ptr<TokenAxis> key_axis_;    ///< x: token ticks, thinned by pixel space
  std::unique_ptr<TokenAxis> query_axis_;  ///< y
  int relayout_guard_ = 0;   ///< bounds the re-replots that settle the tick step after a resize
  int hover_row_ = -1, hover_col_ = -1;
  bool following_ = false;  ///< inside setViewRange()/showHover(): do not echo signals

  QStackedLayout* stack_ = nullptr;
  QLabel* empty_label_ = nullptr;
  QLabel* hover_label_ = nullptr;
  QCustomPlot* plot_ = nullptr;
  QCPColorMap* map_ = nullptr;
  QCPColorMap* detail_map_ = nullptr;  ///< setDetail()'s region, over map_
  std::optional<HeatmapData> detail_;
  std::optional<std::pair<int64_t, int64_t>> hover_detail_;  ///< detail cell under the mouse
  QCPColorScale* scale_ = nullptr;
  QCPTextElement* title_ = nullptr;
};

}  // namespace poslens
