#include "app/gui/panels/position_map_panel.h"

#include <QComboBox>
#include <QFileDialog>
#include <QDir>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QMessageBox>
#include <QSignalBlocker>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QVBoxLayout>

#include <cmath>

#include "app/gui/session.h"
#include "widgets/figure_export.h"
#include "widgets/heatmap_view.h"
#include "widgets/token_axis.h"

namespace poslens::gui {

PositionMapPanel::PositionMapPanel(Session& session) : Panel(session) {
  widget_ = new QWidget;
  auto* layout = new QVBoxLayout(widget_);
  auto* top = new QHBoxLayout;
  compute_ = new QPushButton(tr("Compute for the selected head"));
  compute_->setToolTip(tr("Pattern and position-only map of the head selected in the Heads "
                          "panel, on the input text"));
  info_ = new QLabel(tr("Position-only attention: what each head would attend to from position "
                        "alone, beside its real pattern."));
  info_->setWordWrap(true);
  right_ = new QComboBox;
  right_->addItems({tr("position only"), tr("token–token term"), tr("token–position term"),
                    tr("position–token term"), tr("position–position term"), tr("bias terms")});
  right_->setToolTip(tr("Absolute positions, layer 0: the logits split into four terms (and "
                        "the biases) that sum to them (Ke et al. 2020)"));
  right_->setVisible(false);
  export_ = new QPushButton(tr("Export…"));
  export_->setToolTip(tr("Both views side by side as PNG/PDF/SVG, or the maps as CSV"));
  export_->setEnabled(false);
  probe_samples_ = new QSpinBox;
  probe_samples_->setRange(0, 1 << 16);
  probe_samples_->setValue(16);
  probe_samples_->setPrefix(tr("probe "));
  probe_samples_->setSpecialValueText(tr("probe: every token"));
  probe_samples_->setToolTip(
      tr("Rotary models: the position-only map is the head's mean logit by distance from the "
         "U-shape probe, which runs this many forward passes of the input's length (once per "
         "length and count; 0: every token of the vocabulary)"));
  top->addWidget(compute_);
  top->addWidget(probe_samples_);
  top->addWidget(export_);
  top->addWidget(right_);
  top->addWidget(info_, 1);
  layout->addLayout(top);
  auto* split = new QSplitter(Qt::Horizontal);
  pattern_ = new HeatmapView;
  position_ = new HeatmapView;
  sink_ = new HeatmapView;
  sink_->setToolTip(tr("The learned sink's share of each row (1 − Σ_j p_ij): the attention this "
                       "head gives to no key (gpt-oss's per-head sink logit)"));
  sink_->setMinimumWidth(120);
  sink_->setMaximumWidth(240);
  sink_->setVisible(false);
  counted_ = new QListWidget;
  counted_->setToolTip(tr("CoPE: the tokens this head counts (mean gate over the queries that "
                          "see them, and how often they occur)"));
  counted_->setVisible(false);
  split->addWidget(pattern_);
  split->addWidget(sink_);
  split->addWidget(position_);
  split->addWidget(counted_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 0);
  split->setStretchFactor(2, 3);
  split->setStretchFactor(3, 1);
  layout->addWidget(split, 1);

  // Linked zoom, pan and hover.
  for (auto [from, to] : {std::pair{pattern_, position_}, std::pair{position_, pattern_}}) {
    connect(from, &HeatmapView::viewChanged, to, &HeatmapView::setViewRange);
    connect(from, &HeatmapView::hovered, to,
            [to = to](int query, int key, double) { to->showHover(query, key); });
    // The sink column follows the maps' rows.
    connect(from, &HeatmapView::viewChanged, sink_,
            [this](double, double, double y0, double y1) { sink_->setViewRange(-0.5, 0.5, y0, y1); });
    connect(from, &HeatmapView::hovered, sink_,
            [this](int query, int key, double) {
              if (query < 0 || key < 0) sink_->showHover(-1, -1);
              else sink_->showHover(query, 0);
            });
  }
  connect(compute_, &QPushButton::clicked, this, &PositionMapPanel::compute);
  connect(export_, &QPushButton::clicked, this, &PositionMapPanel::exportDialog);
  connect(this, &Panel::figureChanged, this, [this] { export_->setEnabled(hasFigure()); });
  connect(right_, &QComboBox::currentIndexChanged, this, &PositionMapPanel::showRight);
  connect(&session, &Session::headSelected, this, [this](int layer, int head) {
    if (following_ && layer >= 0 && head >= 0) request(layer, head);
  });
  connect(&session, &Session::inputChanged, this, [this] { following_ = false; });
  connect(&session, &Session::modelOpened, this, [this] {
    following_ = false;
    pattern_->clear();
    position_->clear();
    sink_->clear();
    sink_->setVisible(false);
    counted_->clear();
    counted_->setVisible(false);
    emit figureChanged();
  });
}

void PositionMapPanel::request(int layer, int head) {
  if (!session().ready(tr("Nothing to map"), true)) return;
  session().submit(QStringLiteral("positions"), tr("Position-only maps…"),
                   positions_job(session().input(), layer, head, Session::kHeadMapCells,
                                 probe_samples_->value()),
                   [this](const std::any& result) { show(std::any_cast<PositionView>(result)); });
}

void PositionMapPanel::show(const PositionView& view) {
  following_ = true;
  shown_ = view;
  pattern_->setHeatmap(view.pattern);
  if (view.sink.rows > 0) sink_->setHeatmap(view.sink);
  else sink_->clear();
  sink_->setVisible(view.sink.rows > 0);
  right_->setVisible(!view.absolute_terms.empty());
  showRight(view.absolute_terms.empty() ? 0 : right_->currentIndex());
  info_->setText(tr("Layer %1, head %2 · method: %3 · %4")
                     .arg(view.layer)
                     .arg(view.head)
                     .arg(view.method, view.explanation));
  counted_->clear();
  counted_->addItems(view.counted);
  counted_->setVisible(!view.counted.isEmpty());
  emit figureChanged();
}

void PositionMapPanel::showFile(const PositionView& view) {
  show(view);
  following_ = false;  // the file's head: selecting another head asks nothing of a model
}

void PositionMapPanel::showRight(int index) {
  if (right_->currentIndex() != index) {
    const QSignalBlocker quiet(right_);
    right_->setCurrentIndex(index);
  }
  const bool term = index > 0 && index <= static_cast<int>(shown_.absolute_terms.size());
  position_->setHeatmap(term ? shown_.absolute_terms[static_cast<size_t>(index - 1)]
                             : shown_.position);
  emit figureChanged();
}

void PositionMapPanel::compute() {
  auto [layer, head] = session().selectedHead();
  request(std::max(layer, 0), std::max(head, 0));
}

bool PositionMapPanel::hasFigure() const { return position_->hasHeatmap(); }

bool PositionMapPanel::exportFigure(const QString& path, FigureFormat format, QString* error) {
  if (!hasFigure()) {
    if (error) *error = tr("Nothing to export: compute the maps first");
    return false;
  }
  const bool png = format == FigureFormat::Png;
  const bool sink = sink_->hasHeatmap();
  std::vector<QCustomPlot*> plots{pattern_->plot(), position_->plot()};
  if (sink) plots.insert(plots.begin() + 1, sink_->plot());
  return exportPlotsSideBySide(plots, path, format, png ? 1200 : 0, png ? 1100 : 0,
                               tr("L%1 H%2 pattern | %3").arg(shown_.layer).arg(shown_.head)
                                   .arg(right_->currentText()),
                               error, sink ? std::vector<double>{1.0, 0.3, 1.0} : std::vector<double>{});
}

namespace {

QString label(const std::vector<std::string>& labels, int64_t position) {
  return position < static_cast<int64_t>(labels.size())
             ? csvField(QString::fromStdString(labels[static_cast<size_t>(position)]))
             : QString();
}

}  // namespace

bool PositionMapPanel::exportData(const QString& path, QStringList* written, QString* error) {
  if (!hasFigure()) {
    if (error) *error = tr("Nothing to export: compute the maps first");
    return false;
  }
  const HeatmapData& left = pattern_->heatmap();
  const HeatmapData& right = position_->heatmap();
  if (left.rows != right.rows || left.cols != right.cols) {
    if (error) *error = tr("The two views differ in size; recompute the maps");
    return false;
  }
  QString text = QStringLiteral("layer,head,q_pos,k_pos,query_token,key_token,pattern,%1\n")
                     .arg(QString(right_->currentText()).replace(QLatin1Char(' '), QLatin1Char('_'))
                              .replace(QStringLiteral("–"), QStringLiteral("_")));
  for (int64_t r = 0; r < left.rows; ++r) {
    const int64_t q = sourceBlock(r, left.rows, left.source_rows).first;
    for (int64_t c = 0; c < left.cols; ++c) {
      const float a = left.at(r, c), b = right.at(r, c);
      if (!std::isfinite(a) && !std::isfinite(b)) continue;  // masked in both
      const int64_t k = sourceBlock(c, left.cols, left.source_cols).first;
      text += QStringLiteral("%1,%2,%3,%4,%5,%6,%7,%8\n")
                  .arg(shown_.layer).arg(shown_.head).arg(q).arg(k)
                  .arg(label(left.row_labels, q), label(left.col_labels, k),
                       std::isfinite(a) ? QString::number(a, 'g', 7) : QString(),
                       std::isfinite(b) ? QString::number(b, 'g', 7) : QString());
    }
  }
  if (!writeTextAtomically(path, QStringLiteral("CSV"), text, error)) return false;
  if (written) *written = QStringList{path};
  const QFileInfo info(path);
  if (sink_->hasHeatmap()) {
    const HeatmapData& sink = sink_->heatmap();
    QString shares = QStringLiteral("layer,head,q_pos,query_token,sink_share\n");
    for (int64_t r = 0; r < sink.rows; ++r) {
      const int64_t q = sourceBlock(r, sink.rows, sink.source_rows).first;
      shares += QStringLiteral("%1,%2,%3,%4,%5\n")
                    .arg(shown_.layer).arg(shown_.head).arg(q)
                    .arg(label(sink.row_labels, q), QString::number(sink.at(r, 0), 'g', 7));
    }
    const QString sink_path = info.dir().filePath(info.completeBaseName() + "-sink.csv");
    if (!writeTextAtomically(sink_path, QStringLiteral("CSV"), shares, error)) return false;
    if (written) written->append(sink_path);
  }
  if (shown_.counted_tokens.empty()) return true;
  QString counted = QStringLiteral("rank,token,id,mean_gate,count\n");
  int rank = 1;
  for (const auto& t : shown_.counted_tokens)
    counted += QStringLiteral("%1,%2,%3,%4,%5\n")
                   .arg(rank++).arg(csvField(t.token)).arg(t.id).arg(t.mean_gate, 0, 'g', 7).arg(t.count);
  const QString counted_path = info.dir().filePath(info.completeBaseName() + "-counted.csv");
  if (!writeTextAtomically(counted_path, QStringLiteral("CSV"), counted, error)) return false;
  if (written) written->append(counted_path);
  return true;
}

void PositionMapPanel::exportDialog() {
  if (!hasFigure()) return;
  QString filter;
  QString path = QFileDialog::getSaveFileName(
      widget_, tr("Export pattern | position map"),
      QStringLiteral("position-map-L%1H%2.png").arg(shown_.layer).arg(shown_.head),
      tr("PNG image (*.png);;PDF (*.pdf);;SVG (*.svg);;CSV data (*.csv)"), &filter);
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty())  // a name without suffix: the chosen filter's
    path += filter.mid(filter.indexOf(QStringLiteral("*.")) + 1).chopped(1);
  QString error;
  QStringList written{path};
  const bool ok = path.endsWith(QStringLiteral(".csv"), Qt::CaseInsensitive)
                      ? exportData(path, &written, &error)
                      : exportFigure(path, figureFormatForPath(path), &error);
  if (ok) info_->setText(tr("Wrote %1").arg(written.join(QStringLiteral(", "))));
  else QMessageBox::critical(widget_, tr("Export failed"), error);
}

}  // namespace poslens::gui
