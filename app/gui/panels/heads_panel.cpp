#include "app/gui/panels/heads_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QMessageBox>
#include <QPushButton>
#include <QLabel>
#include <QListWidget>
#include <QSignalBlocker>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "analysis/heads_csv.h"
#include "app/gui/session.h"
#include "app/gui/view_names.h"
#include "widgets/figure_export.h"
#include "widgets/head_grid.h"

namespace poslens::gui {

HeadsPanel::HeadsPanel(Session& session) : Panel(session) {
  view_ = new QComboBox;
  view_->setObjectName("viewSelector");
  view_->setToolTip(tr("Which per-head map the thumbnails and the centre view show"));
  grid_ = new HeadGrid;
  widget_ = new QWidget;
  widget_->setMinimumWidth(300);
  auto* layout = new QVBoxLayout(widget_);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* show_row = new QFormLayout;
  show_row->setContentsMargins(8, 4, 8, 0);
  show_row->addRow(tr("Show"), view_);
  colour_ = new QComboBox;
  colour_->setObjectName("colourSelector");
  colour_->setToolTip(tr("Colour the grid by a metric of each head on the input"));
  colour_->addItem(tr("thumbnails"));
  // In head_metric_names() order (analysis/heads.h has each formula).
  for (const char* name : {"entropy", "mean distance", "sink (first token)", "sink (first 2 tokens)",
                           "sink (first 3 tokens)", "sink (first 4 tokens)", "previous token",
                           "duplicate token", "induction (repeated random tokens)", "position share",
                           "learned sink (gpt-oss)"})
    colour_->addItem(tr(name));
  show_row->addRow(tr("Colour"), colour_);
  layout->addLayout(show_row);
  legend_ = new QLabel;
  legend_->setContentsMargins(8, 0, 8, 0);
  legend_->setVisible(false);
  layout->addWidget(legend_);
  layout->addWidget(grid_, 3);
  auto* filter_row = new QHBoxLayout;
  filter_row->setContentsMargins(8, 0, 8, 0);
  order_ = new QComboBox;
  order_->addItems({tr("highest first"), tr("lowest first")});
  order_->setToolTip(tr("Order of the ranking below"));
  only_ = new QCheckBox(tr("only ≥"));
  only_->setToolTip(tr("Keep only heads at or beyond the threshold (≥ when highest first, ≤ "
                       "when lowest first); the others are greyed in the grid"));
  threshold_ = new QDoubleSpinBox;
  threshold_->setRange(-1e6, 1e6);
  threshold_->setDecimals(3);
  threshold_->setSingleStep(0.05);
  threshold_->setValue(0.5);
  export_ = new QPushButton(tr("Export…"));
  export_->setToolTip(tr("The grid as PNG/PDF/SVG, or every metric of every head as CSV"));
  filter_row->addWidget(order_);
  filter_row->addWidget(only_);
  filter_row->addWidget(threshold_, 1);
  filter_row->addWidget(export_);
  layout->addLayout(filter_row);
  showFilter(false);
  connect(order_, &QComboBox::currentIndexChanged, this, [this](int i) {
    only_->setText(i == 0 ? tr("only ≥") : tr("only ≤"));
    showMetric();
  });
  connect(only_, &QCheckBox::toggled, this, [this] { showMetric(); });
  connect(threshold_, &QDoubleSpinBox::valueChanged, this, [this] { showMetric(); });
  connect(export_, &QPushButton::clicked, this, &HeadsPanel::exportDialog);
  ranking_ = new QListWidget;
  ranking_->setToolTip(tr("Heads ranked by the metric; click one to select it"));
  ranking_->setVisible(false);
  layout->addWidget(ranking_, 1);
  connect(colour_, &QComboBox::currentIndexChanged, this, [this](int i) { colourBy(i - 1); });
  connect(ranking_, &QListWidget::itemClicked, this, [this](QListWidgetItem* item) {
    const int index = item->data(Qt::UserRole).toInt();
    if (metrics_) this->session().selectHead(index / metrics_->n_heads, index % metrics_->n_heads);
  });
  connect(&session, &Session::inputChanged, this, [this] { metrics_.reset(); });

  connect(view_, &QComboBox::currentIndexChanged, this, [this] {
    this->session().setView(view_->currentData().toString());
  });
  connect(grid_, &HeadGrid::headSelected, &session, &Session::selectHead);

  connect(&session, &Session::modelOpened, this, [this](const ModelSummary& model) {
    grid_->clear();
    const QSignalBlocker quiet(view_);  // filling the list is not a choice of view
    view_->clear();
    for (const auto& view : model.views) view_->addItem(viewLabel(view), view);
  });
  connect(&session, &Session::viewChanged, this, [this](const QString& view) {
    const QSignalBlocker quiet(view_);
    if (const int i = view_->findData(view); i >= 0) view_->setCurrentIndex(i);
  });
  connect(&session, &Session::runFinished, this, [this](const RunSummary& run) {
    grid_->setLayerLabels(run.layer_labels);
    grid_->setHeads(run.n_layers, run.n_heads, run.thumbnails);
    grid_->fitThumbnailsToWidth();
    metrics_.reset();  // a run is of the current input: recompute for it
    if (colour_->currentIndex() > 0) colourBy(colour_->currentIndex() - 1);
  });
  connect(&session, &Session::runCleared, grid_, &HeadGrid::clear);
  connect(&session, &Session::headSelected, this, [this](int layer, int head) {
    const QSignalBlocker quiet(grid_);  // the Session already knows
    grid_->selectHead(layer, head);
  });
}

void HeadsPanel::colourBy(int index) {
  if (colour_->currentIndex() != index + 1) {
    const QSignalBlocker quiet(colour_);
    colour_->setCurrentIndex(index + 1);
  }
  if (index < 0 || grid_->layerCount() == 0) {
    grid_->setMetric({}, {});
    legend_->setVisible(false);
    ranking_->setVisible(false);
    showFilter(false);
    return;
  }
  if (!metrics_) {
    if (session().ready(tr("No head metrics"), true))  // showMetric() runs when they arrive
      session().submit(QStringLiteral("metrics"), tr("Head metrics…"), metrics_job(session().input()),
                       [this](const std::any& r) {
                         metrics_ = std::any_cast<HeadMetricsSummary>(r);
                         showMetric();
                       });
    return;
  }
  showMetric();
}

void HeadsPanel::showMetric() {
  const int m = colour_->currentIndex() - 1;
  if (!metrics_ || m < 0 || m >= metrics_->names.size()) return;
  const auto values = metrics_->metric(m);
  const bool descending = order_->currentIndex() == 0;
  auto kept = [&](double v) {
    if (std::isnan(v)) return false;
    if (!only_->isChecked()) return true;
    return descending ? v >= threshold_->value() : v <= threshold_->value();
  };
  auto shown = values;  // filtered-out heads are drawn grey (no value)
  for (auto& v : shown)
    if (!kept(v)) v = std::nan("");
  grid_->setMetric(colour_->currentText(), shown);
  const auto [lo, hi] = grid_->metricRange();
  legend_->setText(tr("%1: dark %2 … bright %3 (grey: %4)")
                       .arg(colour_->currentText())
                       .arg(lo, 0, 'g', 3)
                       .arg(hi, 0, 'g', 3)
                       .arg(only_->isChecked() ? tr("filtered out or none") : tr("none for this model")));
  legend_->setVisible(true);
  std::vector<int> order;
  for (size_t i = 0; i < values.size(); ++i)
    if (!only_->isChecked() || kept(values[i])) order.push_back(static_cast<int>(i));
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const double x = values[a], y = values[b];
    if (std::isnan(x) || std::isnan(y)) return !std::isnan(x) && std::isnan(y);  // NaN last
    return descending ? x > y : x < y;
  });
  ranking_->clear();
  for (int i : order) {
    auto* item = new QListWidgetItem(QStringLiteral("L%1 H%2   %3")
                                         .arg(i / metrics_->n_heads)
                                         .arg(i % metrics_->n_heads)
                                         .arg(values[i], 0, 'g', 4));
    item->setData(Qt::UserRole, i);
    ranking_->addItem(item);
  }
  ranking_->setVisible(true);
  showFilter(true);
}

void HeadsPanel::showFilter(bool visible) {
  for (QWidget* w : std::initializer_list<QWidget*>{order_, only_, threshold_}) w->setVisible(visible);
}

void HeadsPanel::setSortDescending(bool descending) { order_->setCurrentIndex(descending ? 0 : 1); }

void HeadsPanel::setFilter(std::optional<double> threshold) {
  const QSignalBlocker quiet(threshold_);
  if (threshold) threshold_->setValue(*threshold);
  only_->setChecked(threshold.has_value());
  showMetric();
}

std::vector<int> HeadsPanel::rankedHeads() const {
  std::vector<int> out;
  for (int i = 0; i < ranking_->count(); ++i) out.push_back(ranking_->item(i)->data(Qt::UserRole).toInt());
  return out;
}

bool HeadsPanel::exportMetricsCsv(const QString& path, QString* error) const {
  if (!metrics_) {
    if (error) *error = tr("No head metrics yet: choose a metric under Colour first");
    return false;
  }
  // The same file as `poslens-cli heads --out x.csv` writes (analysis/heads_csv.h).
  const auto text = head_metrics_csv(metrics_->n_layers, metrics_->n_heads, metrics_->values);
  return writeTextAtomically(path, QStringLiteral("CSV"), QString::fromStdString(text), error);
}

bool HeadsPanel::exportGrid(const QString& path, FigureFormat format, QString* error) const {
  if (grid_->layerCount() == 0) {
    if (error) *error = tr("Nothing to export: run the model first");
    return false;
  }
  return exportWidget(*grid_, path, format, tr("PosLens head grid"), error);
}

void HeadsPanel::exportDialog() {
  QString filter;
  QString path = QFileDialog::getSaveFileName(
      widget_, tr("Export head grid or metrics"), QStringLiteral("heads.csv"),
      tr("CSV metrics (*.csv);;PNG image (*.png);;PDF (*.pdf);;SVG (*.svg)"), &filter);
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty())
    path += filter.mid(filter.indexOf(QStringLiteral("*.")) + 1).chopped(1);
  QString error;
  const bool ok = path.endsWith(QStringLiteral(".csv"), Qt::CaseInsensitive)
                      ? exportMetricsCsv(path, &error)
                      : exportGrid(path, figureFormatForPath(path), &error);
  if (!ok) QMessageBox::critical(widget_, tr("Export failed"), error);
}

}  // namespace poslens::gui
