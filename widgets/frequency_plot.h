#pragma once
// FrequencyPlot: the figure of the Frequencies panel and of `poslens-cli probe/frequencies/
// compare --figure` (Chen et al. 2024 Figs. 1–2). One QCustomPlot with the title line (what is shown,
// on what input) above three plots — the curves on the left, 3 and 4 stacked on the right:
//   2. curves: the last query's logit against key position (or distance), the overall curve,
//      the chosen rotary components, the sum of the activated ones, and an extrapolation
//      overlay (the probe at a longer T) with the training length L marked;
//   3. VAF per component as bars, activated band (π/L, 2π/L) shaded, HoPE's cut marked, the
//      wavelength 2π/θ_c on the top axis;
//   4. (with a series) VAF of each component against training step, activated ones bold.
// Plain value types in (analysis/frequency_data.h); drag to pan, wheel to zoom.
#include <QColor>
#include <QString>
#include <QWidget>
#include <vector>

#include "analysis/frequency_data.h"

class QCustomPlot;
class QCPAxis;
class QCPAxisRect;
class QCPLayoutGrid;
class QCPTextElement;

namespace poslens {

enum class FigureFormat;

class FrequencyPlot : public QWidget {
  Q_OBJECT
 public:
  enum class XAxis { Position, Distance };

  explicit FrequencyPlot(QWidget* parent = nullptr);
  ~FrequencyPlot() override;

  /// The curves and VAF to show (empty: an explanatory placeholder). Keeps the shown
  /// components if they exist in the new curves, else picks the default ones.
  void setCurves(const FrequencyCurves& curves);
  /// The probe at a longer T drawn over the curves (Fig. 2c); empty curves remove it.
  void setOverlay(const FrequencyCurves& overlay);
  /// VAF against checkpoint (Fig. 2a) in a fourth row; an empty series removes the row.
  /// `checkpoint_curves` (one per checkpoint of the series, same layer and head) are drawn
  /// thin under the curves, light to dark with training step.
  void setSeries(const VafSeries& series, const std::vector<FrequencyCurves>& checkpoint_curves = {});
  void setXAxis(XAxis axis);
  /// With a series: draw each checkpoint's overall curve and VAF as its difference from the
  /// first checkpoint's (components and their sum are hidden then: they are not differences).
  void setDifference(bool on);
  bool difference() const { return difference_; }
  /// Components drawn as curves (indices; out-of-range ones are ignored).
  void setShownComponents(const std::vector<int>& components);
  /// The activated components plus the three with the highest VAF.
  std::vector<int> defaultComponents() const;
  const std::vector<int>& shownComponents() const { return shown_; }

  bool hasCurves() const { return !curves_.empty(); }
  bool hasSeries() const { return !series_.empty(); }
  const FrequencyCurves& curves() const { return curves_; }

  /// Writes the figure as shown (figure_export.h contract).
  bool exportFigure(const QString& path, FigureFormat format, QString* error,
                    int width = 0, int height = 0);
  /// Writes the data as CSV: the curves to `path`, the VAF table to `<base>-vaf.csv` and the
  /// series to `<base>-series.csv` when shown; `written` gets every path. Atomic per file.
  bool exportCsv(const QString& path, QStringList* written, QString* error) const;
  /// CSV text of each table (tests read these).
  QString curvesCsv() const;
  QString vafCsv() const;
  QString seriesCsv() const;

  QCustomPlot* plot() const { return plot_; }

 private:
  void rebuild();
  void drawCurves();
  void drawVaf();
  /// YaRN's correction range and Liu et al.'s critical dimension (analysis/rope_markers_data.h).
  void drawMarkers(QCPAxis* x, QCPAxis* y);
  /// Shades components [first, last] of the VAF plot with `fill` and a label at `label_y`
  /// (axis-rect ratio from the top).
  void shadeComponents(QCPAxis* x, QCPAxis* y, int first, int last, const QColor& fill, const QString& text,
                       const QColor& text_colour, double label_y);
  void drawSeries();
  double keyX(int64_t key) const;

  QCustomPlot* plot_ = nullptr;
  QCPTextElement* title_ = nullptr;
  QCPAxisRect* curves_rect_ = nullptr;
  QCPAxisRect* vaf_rect_ = nullptr;
  QCPLayoutGrid* side_ = nullptr;       ///< the right column: VAF bars, then the series
  QCPAxisRect* series_rect_ = nullptr;  ///< owned by the layout only while a series is shown
  FrequencyCurves curves_;
  FrequencyCurves overlay_;
  VafSeries series_;
  std::vector<FrequencyCurves> checkpoint_curves_;
  XAxis x_axis_ = XAxis::Position;
  std::vector<int> shown_;
  bool difference_ = false;
};

}  // namespace poslens
