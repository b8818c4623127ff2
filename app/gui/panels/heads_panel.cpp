#include "app/gui/panels/heads_panel.h"

#include <QComboBox>
#include <QFormLayout>
#include <QLabel>
#include <QListWidget>
#include <QSignalBlocker>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "app/gui/session.h"
#include "app/gui/view_names.h"
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
  for (const char* name : {"entropy", "mean distance", "sink (first token)", "previous token",
                           "position share"})
    colour_->addItem(tr(name));
  show_row->addRow(tr("Colour"), colour_);
  layout->addLayout(show_row);
  legend_ = new QLabel;
  legend_->setContentsMargins(8, 0, 8, 0);
  legend_->setVisible(false);
  layout->addWidget(legend_);
  layout->addWidget(grid_, 3);
  ranking_ = new QListWidget;
  ranking_->setToolTip(tr("Heads ranked by the metric; click one to select it"));
  ranking_->setVisible(false);
  layout->addWidget(ranking_, 1);
  connect(colour_, &QComboBox::currentIndexChanged, this, [this](int i) { colourBy(i - 1); });
  connect(ranking_, &QListWidget::itemClicked, this, [this](QListWidgetItem* item) {
    const int index = item->data(Qt::UserRole).toInt();
    if (metrics_) this->session().selectHead(index / metrics_->n_heads, index % metrics_->n_heads);
  });
  connect(&session, &Session::metricsReady, this, [this](const HeadMetricsSummary& m) {
    metrics_ = m;
    showMetric();
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
    return;
  }
  if (!metrics_) {
    session().computeHeadMetrics();  // showMetric() runs when they arrive
    return;
  }
  showMetric();
}

void HeadsPanel::showMetric() {
  const int m = colour_->currentIndex() - 1;
  if (!metrics_ || m < 0 || m >= metrics_->names.size()) return;
  const auto values = metrics_->metric(m);
  grid_->setMetric(colour_->currentText(), values);
  const auto [lo, hi] = grid_->metricRange();
  legend_->setText(tr("%1: dark %2 … bright %3 (grey: none for this model)")
                       .arg(colour_->currentText())
                       .arg(lo, 0, 'g', 3)
                       .arg(hi, 0, 'g', 3));
  legend_->setVisible(true);
  std::vector<int> order(values.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const double x = std::isnan(values[a]) ? -1e300 : values[a];
    const double y = std::isnan(values[b]) ? -1e300 : values[b];
    return x > y;
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
}

}  // namespace poslens::gui
