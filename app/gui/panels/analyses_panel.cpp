#include "app/gui/panels/analyses_panel.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include "analysis/analysis_registry.h"
#include "app/gui/jobs/jobs.h"
#include "app/gui/session.h"
#include "widgets/curve_plot.h"
#include "widgets/figure_export.h"
#include "widgets/heatmap_view.h"

namespace poslens::gui {
namespace {

/// Run asks for a file first: another checkpoint (divergence) or a text (length-loss).
bool asks_for_file(const std::string& analysis) { return analysis == "divergence" || analysis == "length-loss"; }

}  // namespace

AnalysesPanel::AnalysesPanel(Session& session) : Panel(session) {
  widget_ = new QWidget;
  auto* layout = new QVBoxLayout(widget_);
  auto* top = new QHBoxLayout;
  analysis_ = new QComboBox;
  analysis_->setObjectName("analysisSelector");
  for (const auto& entry : analysis_entries())
    if (entry.panel_run)  // "…": Run asks for a checkpoint or a text file first
      analysis_->addItem(QString::fromUtf8(entry.title) + (asks_for_file(entry.name) ? QStringLiteral("…") : QString()),
                         QString::fromUtf8(entry.name));
  analysis_->setToolTip(tr("Which analysis Run computes on the open model and the input text"));
  layer_ = new QSpinBox;
  layer_->setPrefix(tr("layer "));
  layer_->setRange(0, 0);
  layer_->setToolTip(tr("Frequency usage: the layer whose heads the left map shows"));
  offset_ = new QSpinBox;
  offset_->setPrefix(tr("Δ = "));
  offset_->setRange(0, 1 << 20);
  offset_->setValue(100);
  offset_->setToolTip(tr("Position offset: added to every position index (absolute tables, RoPE angles, "
                         "additive terms' indices)"));
  offset_->setVisible(false);
  head_ = new QSpinBox;
  head_->setPrefix(tr("head "));
  head_->setRange(0, 4095);
  head_->setToolTip(tr("A capture file: the stored head shown"));
  head_->setVisible(false);
  run_ = new QPushButton(tr("Run"));
  auto* open = new QPushButton(tr("Open file…"));
  open->setToolTip(tr("Show an analysis file poslens-cli wrote (%1; probes and position maps go to their "
                      "panels), without the model")
                       .arg(QString::fromStdString(
                           analysis_names([](const AnalysisEntry& e) { return e.shown_in == ShownIn::Analyses; }))));
  export_ = new QPushButton(tr("Export…"));
  export_->setToolTip(tr("The figure as PNG/PDF/SVG, or the result as CSV (the CLI's columns)"));
  export_->setEnabled(false);
  top->addWidget(analysis_, 1);
  top->addWidget(layer_);
  top->addWidget(offset_);
  top->addWidget(head_);
  top->addWidget(run_);
  top->addWidget(open);
  top->addWidget(export_);
  layout->addLayout(top);
  summary_ = new QLabel(tr("Analyses beyond attention maps: which rotary frequencies heads use, "
                           "where massive activations sit, how two checkpoints' heads differ."));
  summary_->setWordWrap(true);
  provenance_ = new QLabel;
  provenance_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  provenance_->setWordWrap(true);
  provenance_->setStyleSheet(QStringLiteral("color: #555"));
  layout->addWidget(summary_);
  layout->addWidget(provenance_);
  maps_ = new QSplitter(Qt::Horizontal);
  left_ = new HeatmapView;
  right_ = new HeatmapView;
  third_ = new HeatmapView;
  maps_->addWidget(left_);
  maps_->addWidget(right_);
  maps_->addWidget(third_);
  table_ = new QTableWidget;
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setVisible(false);
  curves_ = new CurvePlot;
  curves_->setVisible(false);
  layout->addWidget(curves_, 2);
  layout->addWidget(maps_, 3);
  layout->addWidget(table_, 1);

  connect(run_, &QPushButton::clicked, this, [this] {
    const std::string name = chosen();
    if (name == "divergence") {
      const QString other = QFileDialog::getExistingDirectory(
          widget_, tr("Checkpoint folder to compare with (same layers and heads)"));
      if (!other.isEmpty()) run(name, other);
      return;
    }
    if (name == "length-loss") {
      const QString text = QFileDialog::getOpenFileName(widget_, tr("Text to measure the loss on (real text)"),
                                                        QStringLiteral("/usr/share/games/fortunes"));
      if (!text.isEmpty()) run(name, text);
      return;
    }
    run(name);
  });
  connect(open, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(widget_, tr("Open analysis"), QString(),
                                                      tr("PosLens analysis (*.h5 *.hdf5)"));
    if (!path.isEmpty()) openFile(path);
  });
  connect(export_, &QPushButton::clicked, this, &AnalysesPanel::exportDialog);
  // A capture file shows one head at a time: choosing another reads it from the file.
  for (QSpinBox* spin : {layer_, head_})
    connect(spin, &QSpinBox::valueChanged, this, [this] {
      if (shown_.kind == QStringLiteral("captures") && !file_.isEmpty()) openFile(file_);
    });
  connect(analysis_, &QComboBox::currentIndexChanged, this, [this] {
    layer_->setVisible(chosen() == "frequency-usage");
    offset_->setVisible(chosen() == "position-offset");
  });
  connect(&session, &Session::modelOpened, this, [this](const ModelSummary& summary) {
    layer_->setRange(0, std::max(summary.n_layers - 1, 0));
    rotary_ = summary.rotary;
  });
}

std::string AnalysesPanel::chosen() const { return analysis_->currentData().toString().toStdString(); }

QStringList AnalysesPanel::choices() const {
  QStringList names;
  for (int i = 0; i < analysis_->count(); ++i) names << analysis_->itemData(i).toString();
  return names;
}

void AnalysesPanel::run(const std::string& analysis, const QString& other) {
  const int index = analysis_->findData(QString::fromStdString(analysis));
  if (index < 0) {
    QMessageBox::warning(widget_, tr("Analyses"),
                         tr("The Analyses panel does not run \"%1\" (it runs: %2).")
                             .arg(QString::fromStdString(analysis), choices().join(QStringLiteral(", "))));
    return;
  }
  analysis_->setCurrentIndex(index);
  if (!session().ready(tr("Nothing to analyse"), true)) return;
  Work work;
  if (analysis == "frequency-usage") {
    work = frequency_usage_job(session().input(), layer_->value());
  } else if (analysis == "massive-activations") {
    work = massive_activations_job(session().input());
  } else if (analysis == "divergence") {
    work = divergence_job(session().input(), other);
  } else if (analysis == "length-loss") {
    QStringList scalings{QStringLiteral("none")};
    if (rotary_) scalings << QStringLiteral("linear:4") << QStringLiteral("ntk:4") << QStringLiteral("yarn:4");
    work = length_loss_job(other, scalings);
  } else if (analysis == "position-offset") {
    const auto [layer, head] = session().selectedHead();
    work = position_offset_job(session().input(), offset_->value(), std::max(layer, 0), std::max(head, 0));
  } else if (analysis == "heinsen-states") {
    work = heinsen_states_job(session().input());
  } else if (analysis_entry(analysis).run) {  // a plain analysis: the generic job and view
    work = plain_analysis_job(session().input(), analysis);
  } else {  // marked panel_run without its job here: AnalysesWindow.TheChooserAndTheFileReadersAreTheRegistrys
    QMessageBox::warning(widget_, tr("Analyses"), tr("No job for \"%1\" in this build.").arg(analysis_->itemText(index)));
    return;
  }
  session().submit(QStringLiteral("analysis"), tr("%1…").arg(analysis_->itemText(index)), std::move(work),
                   [this](const std::any& result) { show(std::any_cast<AnalysisView>(result)); });
}

void AnalysesPanel::openFile(const QString& path) {
  session().submit(QStringLiteral("analysis"), tr("Reading %1…").arg(QFileInfo(path).fileName()),
                   open_analysis_job(path, layer_->value(), head_->value()), [this, path](const std::any& result) {
                     if (const auto* series = std::any_cast<SeriesSummary>(&result))
                       emit frequencyFileOpened(*series);
                     else if (const auto* position = std::any_cast<PositionView>(&result))
                       emit positionFileOpened(*position);
                     else {
                       file_ = path;
                       show(std::any_cast<AnalysisView>(result));
                     }
                   });
}

void AnalysesPanel::show(const AnalysisView& view) {
  shown_ = view;
  const bool captures = view.kind == QStringLiteral("captures");
  if (captures) layer_->setMaximum(4095);  // the file says which layers exist
  // The chooser names what is shown (a file of another analysis selects that one).
  if (const int index = analysis_->findData(view.kind); index >= 0) analysis_->setCurrentIndex(index);
  layer_->setVisible(captures || view.kind == QStringLiteral("frequency-usage"));
  head_->setVisible(captures);
  summary_->setText(QStringLiteral("<b>%1</b> — %2").arg(view.title.toHtmlEscaped(), view.summary.toHtmlEscaped()));
  provenance_->setText(view.provenance);
  maps_->setVisible(view.has_maps());
  table_->setVisible(!view.table_rows.empty());
  curves_->setVisible(view.has_curves());
  if (view.has_curves()) curves_->setCurves(view.curves);
  if (view.has_maps()) {
    left_->setHeatmap(view.left);
    right_->setHeatmap(view.right);
    third_->setVisible(!view.third.values.empty());
    if (!view.third.values.empty()) third_->setHeatmap(view.third);
  } else {
    left_->clear();
    right_->clear();
  }
  table_->clear();
  if (!view.table_rows.empty()) {
    table_->setColumnCount(static_cast<int>(view.table_header.size()));
    table_->setHorizontalHeaderLabels(view.table_header);
    table_->setRowCount(static_cast<int>(view.table_rows.size()));
    for (int r = 0; r < static_cast<int>(view.table_rows.size()); ++r)
      for (int c = 0; c < view.table_rows[static_cast<size_t>(r)].size(); ++c)
        table_->setItem(r, c, new QTableWidgetItem(view.table_rows[static_cast<size_t>(r)][c]));
    table_->resizeColumnsToContents();
  }
  export_->setEnabled(true);
  emit figureChanged();
}

void AnalysesPanel::setOffset(int offset) { offset_->setValue(offset); }

bool AnalysesPanel::hasFigure() const { return shown_.has_maps() || shown_.has_curves(); }

bool AnalysesPanel::exportFigure(const QString& path, FigureFormat format, QString* error) {
  if (!hasFigure()) {
    if (error) *error = tr("This result is a table: export it as CSV");
    return false;
  }
  const bool png = format == FigureFormat::Png;
  if (!shown_.has_maps()) return curves_->exportFigure(path, format, error, png ? 1400 : 0, png ? 700 : 0);
  std::vector<QCustomPlot*> plots = {left_->plot(), right_->plot()};
  if (!shown_.third.values.empty()) plots.push_back(third_->plot());
  return exportPlotsSideBySide(plots, path, format, png ? 700 : 0, png ? 900 : 0,
                               shown_.title, error);
}

bool AnalysesPanel::exportCsv(const QString& path, QString* error) const {
  if (shown_.csv.empty()) {
    if (error) *error = tr("Nothing to export: run an analysis or open a file first");
    return false;
  }
  return writeTextAtomically(path, QStringLiteral("CSV"), QString::fromStdString(shown_.csv), error);
}

void AnalysesPanel::exportDialog() {
  QString filter;
  const QString filters = hasFigure() ? tr("PNG image (*.png);;PDF (*.pdf);;SVG (*.svg);;CSV data (*.csv)")
                                      : tr("CSV data (*.csv)");
  QString path = QFileDialog::getSaveFileName(widget_, tr("Export analysis"),
                                              shown_.file_stem + (hasFigure() ? ".png" : ".csv"), filters, &filter);
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += filter.mid(filter.indexOf(QStringLiteral("*.")) + 1).chopped(1);
  QString error;
  const bool ok = path.endsWith(QStringLiteral(".csv"), Qt::CaseInsensitive)
                      ? exportCsv(path, &error)
                      : exportFigure(path, figureFormatForPath(path), &error);
  if (!ok) QMessageBox::critical(widget_, tr("Export failed"), error);
}

}  // namespace poslens::gui
