#pragma once
// CurvePlot: several curves over one x axis (analysis/curve_data.h) with a legend and labelled
// vertical markers — the length-generalisation loss curves (each checkpoint and RoPE scaling,
// L marked) and the massive-activation magnitudes per layer (log y). Drag to pan, wheel to zoom.
#include <QString>
#include <QWidget>

#include "analysis/curve_data.h"

class QCustomPlot;

namespace poslens {

enum class FigureFormat;

class CurvePlot : public QWidget {
  Q_OBJECT
 public:
  explicit CurvePlot(QWidget* parent = nullptr);
  ~CurvePlot() override;

  void setCurves(const CurveSet& curves);
  const CurveSet& curves() const { return curves_; }
  bool hasCurves() const { return !curves_.empty(); }
  /// Writes the figure (figure_export.h contract).
  bool exportFigure(const QString& path, FigureFormat format, QString* error, int width = 0, int height = 0);
  /// x and one column per curve, as CSV text.
  QString csv() const;
  QCustomPlot* plot() const { return plot_; }

 private:
  QCustomPlot* plot_ = nullptr;
  CurveSet curves_;
};

}  // namespace poslens
