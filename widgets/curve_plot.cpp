#include "widgets/curve_plot.h"

#include <qcustomplot.h>

#include <QVBoxLayout>
#include <cmath>

#include "widgets/figure_export.h"

namespace poslens {
namespace {

/// Distinguishable line colours (Okabe–Ito), cycled.
QColor colour(int i) {
  static const QColor colours[] = {QColor(0, 114, 178), QColor(213, 94, 0),  QColor(0, 158, 115),
                                   QColor(204, 121, 167), QColor(230, 159, 0), QColor(86, 180, 233),
                                   QColor(0, 0, 0),       QColor(240, 228, 66)};
  return colours[i % 8];
}

}  // namespace

CurvePlot::CurvePlot(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  plot_ = new QCustomPlot(this);
  plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  plot_->plotLayout()->insertRow(0);
  plot_->plotLayout()->addElement(0, 0, new QCPTextElement(plot_, QString(), QFont(font().family(), 10, QFont::Bold)));
  layout->addWidget(plot_);
}

CurvePlot::~CurvePlot() = default;

void CurvePlot::setCurves(const CurveSet& curves) {
  curves_ = curves;
  plot_->clearGraphs();
  plot_->clearItems();
  static_cast<QCPTextElement*>(plot_->plotLayout()->element(0, 0))->setText(QString::fromStdString(curves.title));
  plot_->xAxis->setLabel(QString::fromStdString(curves.x_label));
  plot_->yAxis->setLabel(QString::fromStdString(curves.y_label));
  if (curves.log_y) {
    plot_->yAxis->setScaleType(QCPAxis::stLogarithmic);
    plot_->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
  } else {
    plot_->yAxis->setScaleType(QCPAxis::stLinear);
    plot_->yAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
  }
  const QVector<double> x(curves.x.begin(), curves.x.end());
  for (size_t c = 0; c < curves.y.size(); ++c) {
    auto* g = plot_->addGraph();
    QVector<double> y(curves.y[c].begin(), curves.y[c].end());
    for (auto& v : y)
      if (!std::isfinite(v) || (curves.log_y && v <= 0)) v = std::nan("");  // gaps
    g->setData(x, y, true);
    const int hue = c < curves.colour.size() ? curves.colour[c] : static_cast<int>(c);
    const int dash = c < curves.dash.size() ? curves.dash[c] : 0;
    static const Qt::PenStyle styles[] = {Qt::SolidLine, Qt::DashLine, Qt::DotLine, Qt::DashDotLine};
    g->setPen(QPen(colour(hue), 1.6, styles[dash % 4]));
    g->setName(c < curves.names.size() ? QString::fromStdString(curves.names[c]) : QString());
  }
  plot_->legend->setVisible(curves.y.size() > 1);
  plot_->legend->setFont(QFont(font().family(), 8));
  plot_->rescaleAxes();
  for (const auto& [at, label] : curves.markers) {
    auto* line = new QCPItemStraightLine(plot_);
    line->point1->setCoords(at, 0);
    line->point2->setCoords(at, 1);
    line->setPen(QPen(Qt::darkGray, 1.2, Qt::DashLine));
    auto* text = new QCPItemText(plot_);
    text->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    text->position->setCoords(at, 0.02);
    text->setPositionAlignment(Qt::AlignTop | Qt::AlignLeft);
    text->setText(QStringLiteral(" ") + QString::fromStdString(label));
    text->setColor(Qt::darkGray);
    text->setFont(QFont(font().family(), 8));
  }
  plot_->replot();
}

bool CurvePlot::exportFigure(const QString& path, FigureFormat format, QString* error, int width, int height) {
  return exportPlot(*plot_, path, format, width, height, QString::fromStdString(curves_.title), error);
}

QString CurvePlot::csv() const {
  QString out = csvField(QString::fromStdString(curves_.x_label.empty() ? "x" : curves_.x_label));
  for (const auto& n : curves_.names) out += "," + csvField(QString::fromStdString(n));
  out += "\n";
  for (size_t i = 0; i < curves_.x.size(); ++i) {
    out += QString::number(curves_.x[i], 'g', 9);
    for (const auto& y : curves_.y)
      out += "," + (i < y.size() && std::isfinite(y[i]) ? QString::number(y[i], 'g', 9) : QString());
    out += "\n";
  }
  return out;
}

}  // namespace poslens
