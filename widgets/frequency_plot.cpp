#include "widgets/frequency_plot.h"

#include <qcustomplot.h>

#include <QFile>
#include <QFileInfo>
#include <QSaveFile>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <numeric>

#include "analysis/rope_markers_data.h"
#include "widgets/figure_export.h"

namespace poslens {
namespace {

/// Tableau-10 without its grey and red (grey is for components not shown, red for the
/// activated band): distinguishable component colours, the same in every row.
const QColor kPalette[] = {QColor(31, 119, 180), QColor(255, 127, 14), QColor(44, 160, 44),
                           QColor(148, 103, 189), QColor(140, 86, 75), QColor(227, 119, 194),
                           QColor(188, 189, 34), QColor(23, 190, 207)};
const QColor kActivated(214, 39, 40);
const QColor kBand(255, 200, 200, 90);
const QColor kBar(70, 130, 180);
const QColor kCut(170, 170, 170);
const QColor kYarn(40, 120, 60);       // YaRN's correction range
const QColor kCritical(90, 60, 160);   // Liu et al.'s critical dimension

QColor componentColor(int c) { return kPalette[c % 8]; }

QString number(double v) {
  if (std::isnan(v)) return QString();
  if (std::isinf(v)) return QStringLiteral("inf");
  return QString::number(v, 'g', 8);
}

/// Formats a wavelength for the top axis: "6.3", "1.2k", "∞".
QString wavelengthLabel(double theta) {
  if (theta <= 0) return QStringLiteral("∞");
  const double w = 2 * M_PI / theta;
  if (w >= 1e4) return QString::number(w / 1e3, 'f', 0) + "k";
  if (w >= 1e3) return QString::number(w / 1e3, 'f', 1) + "k";
  return QString::number(w, 'f', w < 10 ? 1 : 0);
}

bool writeText(const QString& path, const QString& text, QString* error) {
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly | QIODevice::Text) || file.write(text.toUtf8()) < 0 ||
      !file.commit()) {
    if (error) *error = QStringLiteral("Cannot write %1: %2").arg(path, file.errorString());
    return false;
  }
  return true;
}

}  // namespace

FrequencyPlot::FrequencyPlot(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  plot_ = new QCustomPlot(this);
  plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  plot_->setAutoAddPlottableToLegend(false);
  layout->addWidget(plot_);

  plot_->plotLayout()->insertRow(0);
  QFont title_font = font();
  title_font.setBold(true);
  title_ = new QCPTextElement(plot_, QString(), title_font);
  plot_->plotLayout()->addElement(0, 0, title_);
  // Curves on the left; VAF bars and (with a series) VAF against step stacked on the right.
  curves_rect_ = plot_->axisRect();
  plot_->plotLayout()->take(curves_rect_);
  auto* body = new QCPLayoutGrid;
  plot_->plotLayout()->addElement(1, 0, body);
  body->addElement(0, 0, curves_rect_);
  side_ = new QCPLayoutGrid;
  body->addElement(0, 1, side_);
  body->setColumnStretchFactor(0, 3);
  body->setColumnStretchFactor(1, 2);
  vaf_rect_ = new QCPAxisRect(plot_);
  side_->addElement(0, 0, vaf_rect_);
  series_rect_ = new QCPAxisRect(plot_);
  for (auto* rect : {curves_rect_, vaf_rect_, series_rect_}) {
    rect->setRangeDrag(Qt::Horizontal | Qt::Vertical);
    rect->setRangeZoom(Qt::Horizontal | Qt::Vertical);
  }
  // The legend lives inside the curves row.
  plot_->legend->setVisible(true);
  plot_->legend->setFont(QFont(font().family(), 8));
  plot_->legend->setBrush(QColor(255, 255, 255, 190));  // curves show through
  curves_rect_->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
  rebuild();
}

FrequencyPlot::~FrequencyPlot() {
  // The series row is ours while it is out of the layout.
  if (!side_->hasElement(1, 0)) delete series_rect_;
}

void FrequencyPlot::setCurves(const FrequencyCurves& curves) {
  const int64_t old_components = curves_.n_components();
  curves_ = curves;
  if (shown_.empty() || curves.n_components() != old_components) shown_ = defaultComponents();
  rebuild();
}

void FrequencyPlot::setOverlay(const FrequencyCurves& overlay) {
  overlay_ = overlay;
  rebuild();
}

void FrequencyPlot::setSeries(const VafSeries& series,
                              const std::vector<FrequencyCurves>& checkpoint_curves) {
  series_ = series;
  checkpoint_curves_ = series.empty() ? std::vector<FrequencyCurves>{} : checkpoint_curves;
  rebuild();
}

void FrequencyPlot::setDifference(bool on) {
  difference_ = on;
  rebuild();
}

void FrequencyPlot::setXAxis(XAxis axis) {
  x_axis_ = axis;
  rebuild();
}

void FrequencyPlot::setShownComponents(const std::vector<int>& components) {
  shown_.clear();
  for (int c : components)
    if (c >= 0 && c < curves_.n_components() &&
        std::find(shown_.begin(), shown_.end(), c) == shown_.end())
      shown_.push_back(c);
  rebuild();
}

std::vector<int> FrequencyPlot::defaultComponents() const {
  std::vector<int> out;
  const int n = static_cast<int>(curves_.n_components());
  for (int c = 0; c < n; ++c)
    if (c < static_cast<int>(curves_.activated.size()) && curves_.activated[c]) out.push_back(c);
  std::vector<int> order(static_cast<size_t>(std::min<int>(n, curves_.vaf.size())));
  std::iota(order.begin(), order.end(), 0);
  auto vaf = [&](int c) { return std::isnan(curves_.vaf[c]) ? -1e300 : curves_.vaf[c]; };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return vaf(a) > vaf(b); });
  for (int i = 0, added = 0; i < static_cast<int>(order.size()) && added < 3; ++i)
    if (std::find(out.begin(), out.end(), order[i]) == out.end()) {
      out.push_back(order[i]);
      ++added;
    }
  std::sort(out.begin(), out.end());
  return out;
}

double FrequencyPlot::keyX(int64_t key) const {
  return x_axis_ == XAxis::Position ? static_cast<double>(key)
                                    : static_cast<double>(curves_.T - 1 - key);
}

void FrequencyPlot::rebuild() {
  plot_->clearGraphs();
  plot_->clearPlottables();
  plot_->clearItems();
  plot_->legend->clearItems();
  const bool series_in_layout = side_->hasElement(1, 0);
  if (!series_.empty() && !series_in_layout) {
    side_->addElement(1, 0, series_rect_);
  } else if (series_.empty() && series_in_layout) {
    side_->take(series_rect_);
    side_->simplify();
  }
  title_->setText(curves_.empty() ? (series_.empty() ? QStringLiteral("No frequency analysis yet: run the probe")
                                                     : QString::fromStdString(series_.title))
                                  : QString::fromStdString(curves_.title));
  drawCurves();
  drawVaf();
  if (!series_.empty()) drawSeries();
  plot_->legend->setVisible(plot_->legend->itemCount() > 0);
  plot_->replot();
}

void FrequencyPlot::drawCurves() {
  QCPAxis* x = curves_rect_->axis(QCPAxis::atBottom);
  QCPAxis* y = curves_rect_->axis(QCPAxis::atLeft);
  x->setLabel(x_axis_ == XAxis::Position ? QStringLiteral("key position")
                                         : QStringLiteral("distance from the query"));
  y->setLabel(QStringLiteral("pre-softmax logit"));
  if (curves_.empty()) return;
  const int64_t T = curves_.T;
  QVector<double> keys;
  for (int64_t k = 0; k < T; ++k) keys.push_back(keyX(k));
  auto add_graph = [&](const std::vector<double>& values, const QPen& pen, const QString& name,
                       const QVector<double>& xs) {
    QCPGraph* g = plot_->addGraph(x, y);
    g->setData(xs, QVector<double>(values.begin(), values.end()));
    g->setPen(pen);
    g->setName(name);
    g->addToLegend(plot_->legend);
    return g;
  };

  // Difference view: every checkpoint's overall curve minus the first checkpoint's.
  const bool differences = difference_ && !checkpoint_curves_.empty() && checkpoint_curves_[0].T == T;
  const auto minus_first = [&](const std::vector<double>& values) {
    if (!differences) return values;
    std::vector<double> out(values);
    for (size_t k = 0; k < out.size(); ++k) out[k] -= checkpoint_curves_[0].scores[k];
    return out;
  };
  if (differences) y->setLabel(QStringLiteral("logit − first checkpoint's"));
  // The series' checkpoints, light (early) to dark (late); the last one is `curves_` itself.
  const size_t n_ckpt = checkpoint_curves_.size();
  for (size_t i = differences ? 1 : 0; i + 1 < n_ckpt; ++i) {
    const auto& other = checkpoint_curves_[i];
    if (other.T != T) continue;
    const int grey = 215 - static_cast<int>(140.0 * i / std::max<size_t>(n_ckpt - 1, 1));
    const bool labelled = i == 0 || i + 2 == n_ckpt;
    const int64_t step = i < series_.steps.size() ? series_.steps[i] : -1;
    QCPGraph* g = add_graph(minus_first(other.scores), QPen(QColor(grey, grey, 255), 1.0),
                            step >= 0 ? QStringLiteral("overall at step %1").arg(step)
                                      : QStringLiteral("overall, checkpoint %1").arg(i),
                            keys);
    if (!labelled) plot_->legend->removeItem(plot_->legend->itemWithPlottable(g));
  }
  if (!overlay_.empty()) {
    QVector<double> xs;
    for (int64_t k = 0; k < overlay_.T; ++k)
      xs.push_back(x_axis_ == XAxis::Position ? static_cast<double>(k)
                                              : static_cast<double>(overlay_.T - 1 - k));
    add_graph(overlay_.scores, QPen(QColor(120, 120, 120), 2, Qt::DashLine),
              QStringLiteral("overall at T=%1 (extrapolation)").arg(overlay_.T), xs);
  }
  for (int c : differences ? std::vector<int>{} : shown_) {
    const bool active = c < static_cast<int>(curves_.activated.size()) && curves_.activated[c];
    add_graph(curves_.components[static_cast<size_t>(c)],
              QPen(componentColor(c), active ? 2.0 : 1.2),
              QStringLiteral("c%1%2").arg(c).arg(active ? QStringLiteral(" (activated)") : QString()),
              keys);
  }
  std::vector<double> active_sum(static_cast<size_t>(T), 0.0);
  bool any_active = false;
  for (int c = 0; c < curves_.n_components(); ++c)
    if (curves_.activated[static_cast<size_t>(c)]) {
      any_active = true;
      for (int64_t k = 0; k < T; ++k) active_sum[k] += curves_.components[c][k];
    }
  if (any_active && !differences)
    add_graph(active_sum, QPen(kActivated, 2, Qt::DashLine), QStringLiteral("activated sum"), keys);
  add_graph(minus_first(curves_.scores), QPen(Qt::black, 2.5),
            differences ? QStringLiteral("overall − first checkpoint's") : QStringLiteral("overall"), keys);

  // Training length L, when the curves or the overlay reach past it.
  const int64_t reach = std::max(T, overlay_.empty() ? int64_t{0} : overlay_.T);
  if (curves_.L > 0 && reach > curves_.L && x_axis_ == XAxis::Position) {
    auto* line = new QCPItemStraightLine(plot_);
    line->setClipAxisRect(curves_rect_);
    line->point1->setAxes(x, y);
    line->point2->setAxes(x, y);
    line->point1->setCoords(curves_.L, 0);
    line->point2->setCoords(curves_.L, 1);
    line->setPen(QPen(QColor(200, 0, 0), 1, Qt::DotLine));
  }
  // Token labels under the keys when the curves come from a text short enough to read.
  if (!curves_.key_labels.empty() && T <= 64 && overlay_.empty()) {
    QSharedPointer<QCPAxisTickerText> tokens(new QCPAxisTickerText);
    const int step = T > 32 ? 2 : 1;
    for (int64_t k = 0; k < T && k < static_cast<int64_t>(curves_.key_labels.size()); k += step)
      tokens->addTick(keyX(k), QString::fromStdString(curves_.key_labels[k]));
    x->setTicker(tokens);
    x->setTickLabelRotation(60);
  } else if (x->ticker().dynamicCast<QCPAxisTickerText>()) {
    x->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    x->setTickLabelRotation(0);
  }
  x->rescale();
  y->rescale();
  if (!overlay_.empty()) x->setRange(x->range().lower, std::max<double>(x->range().upper, overlay_.T - 1));
  y->scaleRange(1.1, y->range().center());
  curves_rect_->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
}

void FrequencyPlot::drawVaf() {
  QCPAxis* x = vaf_rect_->axis(QCPAxis::atBottom);
  QCPAxis* y = vaf_rect_->axis(QCPAxis::atLeft);
  QCPAxis* top = vaf_rect_->axis(QCPAxis::atTop);
  x->setLabel(QStringLiteral("rotary component c (θ_c = base^(−2c/d); high frequency left)"));
  y->setLabel(QStringLiteral("VAF (%)"));
  top->setVisible(true);
  top->setLabel(QStringLiteral("wavelength 2π/θ_c (positions) over θ_c (radians per position)"));
  // The layer's own components: θ is NaN past them where another layer has more (Gemma 4's
  // local layers beside its wider global ones).
  int n = static_cast<int>(curves_.n_components());
  while (n > 0 && n <= static_cast<int>(curves_.theta.size()) && std::isnan(curves_.theta[n - 1])) --n;
  if (curves_.empty() || n == 0) {
    top->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    return;
  }
  QVector<double> keys[3], values[3];  // normal, activated, past HoPE's cut
  double lo = 0, hi = 0;
  for (int c = 0; c < n && c < static_cast<int>(curves_.vaf.size()); ++c) {
    const double v = std::isnan(curves_.vaf[c]) ? 0.0 : curves_.vaf[c];
    const int kind = c >= curves_.kept_components ? 2 : (curves_.activated[c] ? 1 : 0);
    keys[kind].push_back(c);
    values[kind].push_back(v);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  const QColor colours[3] = {kBar, kActivated, kCut};
  const QString names[3] = {QStringLiteral("VAF"), QStringLiteral("VAF, activated"),
                            QStringLiteral("VAF, past HoPE cut")};
  for (int kind = 0; kind < 3; ++kind) {
    if (keys[kind].isEmpty()) continue;
    auto* bars = new QCPBars(x, y);
    bars->setData(keys[kind], values[kind]);
    bars->setWidth(0.8);
    bars->setPen(Qt::NoPen);
    bars->setBrush(colours[kind]);
    bars->setName(names[kind]);
    bars->removeFromLegend();
  }
  // The activated band (π/L, 2π/L), shaded behind the bars.
  std::vector<int> band;
  for (int c = 0; c < n; ++c)
    if (curves_.activated[c]) band.push_back(c);
  if (!band.empty())
    shadeComponents(x, y, band.front(), band.back(), kBand,
                    QStringLiteral("activated (π/L, 2π/L), L=%1").arg(curves_.L), kActivated, 0.02);
  drawMarkers(x, y);
  if (curves_.kept_components < n) {  // HoPE: components past the cut do not turn
    auto* cut = new QCPItemStraightLine(plot_);
    cut->setClipAxisRect(vaf_rect_);
    cut->point1->setAxes(x, y);
    cut->point2->setAxes(x, y);
    cut->point1->setCoords(curves_.kept_components - 0.5, 0);
    cut->point2->setCoords(curves_.kept_components - 0.5, 1);
    cut->setPen(QPen(Qt::darkGray, 1.5, Qt::DashLine));
  }
  // Wavelengths over θ_c on the top axis, at most 8 labels (two lines each need the room).
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  const int step = std::max(1, (n + 7) / 8);
  for (int c = 0; c < n; c += step)
    ticker->addTick(c, wavelengthLabel(curves_.theta[c]) + "\n" +
                           QString::number(curves_.theta[c], 'g', 2));
  top->setTicker(ticker);
  QSharedPointer<QCPAxisTickerFixed> whole(new QCPAxisTickerFixed);
  whole->setTickStep(1.0);
  whole->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
  x->setTicker(whole);
  x->setRange(-0.7, n - 0.3);
  top->setRange(x->range());
  QObject::connect(x, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), top,
                   qOverload<const QCPRange&>(&QCPAxis::setRange), Qt::UniqueConnection);
  y->setRange(std::min(lo, 0.0) - 5, std::max(hi, 0.0) + 10);
}

void FrequencyPlot::shadeComponents(QCPAxis* x, QCPAxis* y, int first, int last, const QColor& fill,
                                    const QString& text, const QColor& text_colour, double label_y) {
  auto* rect = new QCPItemRect(plot_);
  rect->setClipAxisRect(vaf_rect_);
  rect->setLayer(QStringLiteral("background"));
  for (auto* p : {rect->topLeft, rect->bottomRight}) {
    p->setAxes(x, y);
    p->setTypeY(QCPItemPosition::ptAxisRectRatio);
    p->setAxisRect(vaf_rect_);
  }
  rect->topLeft->setCoords(first - 0.5, 0);
  rect->bottomRight->setCoords(last + 0.5, 1);
  rect->setPen(Qt::NoPen);
  rect->setBrush(fill);
  auto* label = new QCPItemText(plot_);
  label->setClipAxisRect(vaf_rect_);
  label->position->setAxes(x, y);
  label->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
  label->position->setAxisRect(vaf_rect_);
  label->position->setCoords((first + last) / 2.0, label_y);
  label->setPositionAlignment(Qt::AlignTop | Qt::AlignHCenter);
  label->setText(text);
  label->setColor(text_colour);
  label->setFont(QFont(font().family(), 8));
}

void FrequencyPlot::drawMarkers(QCPAxis* x, QCPAxis* y) {
  if (curves_.L < 1) return;  // no training length: no landmarks
  // A vertical dotted line between components, its label ending at the line (left of it).
  const auto line = [&](double at, const QColor& colour, const QString& text, double label_y) {
    auto* l = new QCPItemStraightLine(plot_);
    l->setClipAxisRect(vaf_rect_);
    for (auto* p : {l->point1, l->point2}) {
      p->setAxes(x, y);
      p->setTypeY(QCPItemPosition::ptAxisRectRatio);
      p->setAxisRect(vaf_rect_);
    }
    l->point1->setCoords(at, 0);
    l->point2->setCoords(at, 1);
    l->setPen(QPen(colour, 1.5, Qt::DotLine));
    auto* label = new QCPItemText(plot_);
    label->setClipAxisRect(vaf_rect_);
    label->position->setAxes(x, y);
    label->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    label->position->setAxisRect(vaf_rect_);
    label->position->setCoords(at, label_y);
    label->setPositionAlignment(Qt::AlignTop | Qt::AlignRight);
    label->setText(text);
    label->setColor(colour);
    label->setFont(QFont(font().family(), 8));
  };
  // YaRN's ramp: the components that turn 1 to 32 times within L, shaded (it ends where the
  // critical dimension begins: both are "one turn within L").
  const auto yarn = yarn_correction_range(curves_.theta, curves_.L);
  if (!yarn.empty())
    shadeComponents(x, y, static_cast<int>(yarn.first), static_cast<int>(yarn.last),
                    QColor(kYarn.red(), kYarn.green(), kYarn.blue(), 28),
                    QStringLiteral("YaRN ramp\n(1–32 turns in L)"), kYarn, 0.20);
  // Liu et al.'s critical dimension: the components from it on never complete a period in L.
  const int64_t critical = critical_component(curves_.theta, curves_.L);
  if (critical > 0 && critical < curves_.n_components())
    line(critical - 0.5, kCritical, QStringLiteral("critical d_extra = %1 ").arg(2 * critical), 0.10);
}

void FrequencyPlot::drawSeries() {
  QCPAxis* x = series_rect_->axis(QCPAxis::atBottom);
  QCPAxis* y = series_rect_->axis(QCPAxis::atLeft);
  const bool have_steps = std::all_of(series_.steps.begin(), series_.steps.end(),
                                      [](int64_t s) { return s >= 0; });
  x->setLabel(have_steps ? QStringLiteral("training step") : QStringLiteral("checkpoint"));
  const bool differences = difference_ && !series_.vaf.empty();
  y->setLabel(differences ? QStringLiteral("VAF − first checkpoint's (points)") : QStringLiteral("VAF (%) per component"));
  QVector<double> xs;
  for (size_t i = 0; i < series_.vaf.size(); ++i)
    xs.push_back(have_steps ? static_cast<double>(series_.steps[i]) : static_cast<double>(i));
  // Components shown as curves keep their colour here; the rest are thin grey lines.
  const int n = static_cast<int>(series_.theta.size());
  for (int c = 0; c < n; ++c) {
    QVector<double> ys;
    for (const auto& row : series_.vaf) {
      const double first = differences && c < static_cast<int>(series_.vaf[0].size()) ? series_.vaf[0][c] : 0.0;
      ys.push_back(c < static_cast<int>(row.size()) ? row[c] - first : qQNaN());
    }
    QCPGraph* g = plot_->addGraph(x, y);
    g->setData(xs, ys);
    const bool active = c < static_cast<int>(series_.activated.size()) && series_.activated[c];
    const bool shown = std::find(shown_.begin(), shown_.end(), c) != shown_.end();
    g->setPen(QPen(shown ? componentColor(c) : QColor(175, 175, 175), active ? 2.5 : (shown ? 1.5 : 0.8)));
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, active ? 5 : 3));
    g->setName(QStringLiteral("VAF c%1%2").arg(c).arg(active ? QStringLiteral(" (activated)") : QString()));
    if (shown && curves_.empty()) g->addToLegend(plot_->legend);
  }
  x->rescale();
  y->rescale();
  x->scaleRange(1.05, x->range().center());
  y->scaleRange(1.1, y->range().center());
}

bool FrequencyPlot::exportFigure(const QString& path, FigureFormat format, QString* error,
                                 int width, int height) {
  return exportPlot(*plot_, path, format, width, height, title_->text(), error);
}

QString FrequencyPlot::curvesCsv() const {
  QString out = QStringLiteral("key_pos,distance,token,overall");
  for (int c = 0; c < curves_.n_components(); ++c) out += QStringLiteral(",c%1").arg(c);
  out += "\n";
  for (int64_t k = 0; k < curves_.T; ++k) {
    QString token = k < static_cast<int64_t>(curves_.key_labels.size())
                        ? QString::fromStdString(curves_.key_labels[k])
                        : QString();
    token.replace('"', QStringLiteral("\"\""));
    out += QStringLiteral("%1,%2,\"%3\",%4").arg(k).arg(curves_.T - 1 - k).arg(token,
                                                                              number(curves_.scores[k]));
    for (const auto& comp : curves_.components) out += "," + number(comp[k]);
    out += "\n";
  }
  return out;
}

QString FrequencyPlot::vafCsv() const {
  QString out = QStringLiteral("component,theta,wavelength,activated,rotates,turns_in_L,beyond_critical,"
                                "yarn_ramp,vaf_percent\n");
  const auto yarn = yarn_correction_range(curves_.theta, curves_.L);
  const int64_t critical = curves_.L > 0 ? critical_component(curves_.theta, curves_.L) : -1;
  for (int c = 0; c < curves_.n_components(); ++c) {
    const double theta = curves_.theta[c];
    out += QStringLiteral("%1,%2,%3,%4,%5,%6,%7,%8,%9\n")
               .arg(c)
               .arg(number(theta), theta > 0 ? number(2 * M_PI / theta) : QStringLiteral("inf"))
               .arg(curves_.activated[c] ? 1 : 0)
               .arg(c < curves_.kept_components ? 1 : 0)
               .arg(curves_.L > 0 ? number(turns_within(theta, curves_.L)) : QString())
               .arg(critical < 0 ? QString() : QString::number(c >= critical ? 1 : 0))
               .arg(!yarn.empty() && c >= yarn.first && c <= yarn.last ? 1 : 0)
               .arg(c < static_cast<int>(curves_.vaf.size()) ? number(curves_.vaf[c]) : QString());
  }
  return out;
}

QString FrequencyPlot::seriesCsv() const {
  QString out = QStringLiteral("checkpoint,step");
  for (size_t c = 0; c < series_.theta.size(); ++c) out += QStringLiteral(",vaf_c%1").arg(c);
  out += "\n";
  for (size_t i = 0; i < series_.vaf.size(); ++i) {
    QString name = QString::fromStdString(series_.names[i]);
    name.replace('"', QStringLiteral("\"\""));
    out += QStringLiteral("\"%1\",%2").arg(name).arg(series_.steps[i]);
    for (double v : series_.vaf[i]) out += "," + number(v);
    out += "\n";
  }
  return out;
}

bool FrequencyPlot::exportCsv(const QString& path, QStringList* written, QString* error) const {
  const QFileInfo info(path);
  const QString base = info.path() + "/" + info.completeBaseName();
  std::vector<std::pair<QString, QString>> files;
  if (!curves_.empty()) {
    files.emplace_back(path, curvesCsv());
    files.emplace_back(base + "-vaf.csv", vafCsv());
  }
  if (!series_.empty()) files.emplace_back(curves_.empty() ? path : base + "-series.csv", seriesCsv());
  if (files.empty()) {
    if (error) *error = QStringLiteral("Nothing to export: run the probe first.");
    return false;
  }
  for (const auto& [file, text] : files) {
    if (!writeText(file, text, error)) return false;
    if (written) written->push_back(file);
  }
  return true;
}

}  // namespace poslens
