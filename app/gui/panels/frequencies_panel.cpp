#include "app/gui/panels/frequencies_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QStackedWidget>
#include <QVBoxLayout>

#include <initializer_list>

#include "app/gui/session.h"
#include "widgets/figure_export.h"
#include "widgets/frequency_plot.h"
#include "widgets/heatmap_view.h"

namespace poslens::gui {
namespace {

QSpinBox* spin(int lo, int hi, int value, const QString& special, const QString& tip) {
  auto* box = new QSpinBox;
  box->setRange(lo, hi);
  box->setValue(value);
  if (!special.isEmpty()) box->setSpecialValueText(special);
  box->setToolTip(tip);
  return box;
}

}  // namespace

FrequenciesPanel::FrequenciesPanel(Session& session) : Panel(session) {
  widget_ = new QWidget;
  auto* layout = new QVBoxLayout(widget_);
  auto* controls = new QHBoxLayout;
  length_ = spin(2, 1 << 20, 128, {}, tr("T: tokens per probe sample, BOS included (default: the training length L)"));
  samples_ = spin(0, 1 << 20, 0, tr("all"),
                  tr("Tokens to average over: all = every non-special token once (exact), "
                     "else that many at random"));
  extrapolate_ = spin(0, 1 << 20, 0, tr("off"),
                      tr("Also probe at this longer T and draw it over the curves (Chen et al. 2024 Fig. 2c)"));
  layer_ = spin(0, 0, 0, {}, tr("Layer shown"));
  per_head_ = new QCheckBox(tr("selected head"));
  per_head_->setToolTip(tr("Show the head selected in the Heads panel instead of the mean over heads"));
  difference_ = new QCheckBox(tr("− first checkpoint"));
  difference_->setObjectName("seriesDifference");
  difference_->setToolTip(tr("Series: draw each checkpoint's curve and VAF minus the first checkpoint's"));
  x_axis_ = new QComboBox;
  x_axis_->addItems({tr("key position"), tr("distance")});
  view_ = new QComboBox;
  view_->setObjectName("frequencyView");
  view_->addItems({tr("curves"), tr("component map")});
  view_->setToolTip(tr("Curves of the last query, or (after On input) one component's term of the "
                       "scores over every query and key"));
  map_component_ = spin(0, 0, 0, {}, tr("The rotary component the map shows (0: the fastest)"));
  map_component_->setObjectName("mapComponent");
  map_component_->setPrefix(tr("c"));
  map_component_->setEnabled(false);
  components_ = new QLineEdit;
  components_->setPlaceholderText(tr("components, e.g. 6,7 (default: activated + top VAF)"));
  components_->setClearButtonEnabled(true);
  run_ = new QPushButton(tr("Run probe"));
  input_ = new QPushButton(tr("On input"));
  input_->setToolTip(tr("Split the selected layer's real scores on the input text by rotary "
                        "component (the last query's row; VAF over the whole map)"));
  series_ = new QPushButton(tr("Compare series"));
  series_->setToolTip(tr("VAF against training step over this run folder's checkpoints"));
  folder_ = new QPushButton(tr("Compare folder…"));
  export_ = new QPushButton(tr("Export…"));
  // Two rows: what to compute, then what to show.
  const auto add_labelled = [](QHBoxLayout* row, const QString& label, QWidget* w) {
    row->addWidget(new QLabel(label));
    row->addWidget(w);
  };
  add_labelled(controls, tr("T"), length_);
  add_labelled(controls, tr("samples"), samples_);
  add_labelled(controls, tr("extrapolate to T"), extrapolate_);
  for (QWidget* w : std::initializer_list<QWidget*>{run_, input_, series_, folder_}) controls->addWidget(w);
  controls->addStretch(1);
  auto* shown = new QHBoxLayout;
  add_labelled(shown, tr("layer"), layer_);
  for (QWidget* w : std::initializer_list<QWidget*>{per_head_, difference_, x_axis_, view_, map_component_})
    shown->addWidget(w);
  shown->addWidget(components_, 1);
  shown->addWidget(export_);
  layout->addLayout(controls);
  layout->addLayout(shown);
  info_ = new QLabel(tr("Open a rotary model (RoPE, scaled RoPE, HoPE) and run the probe."));
  info_->setWordWrap(true);
  info_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(info_);
  plot_ = new FrequencyPlot;
  plot_->setMinimumHeight(320);
  map_ = new HeatmapView;
  map_->setMinimumHeight(320);
  views_ = new QStackedWidget;
  views_->addWidget(plot_);
  views_->addWidget(map_);
  layout->addWidget(views_, 1);

  connect(run_, &QPushButton::clicked, this, &FrequenciesPanel::runProbe);
  connect(input_, &QPushButton::clicked, this, &FrequenciesPanel::decomposeInput);
  connect(series_, &QPushButton::clicked, this, [this] { compareSeries(); });
  connect(folder_, &QPushButton::clicked, this, [this] {
    const auto folder = QFileDialog::getExistingDirectory(
        widget_, tr("Run folder with step-NNNNNN checkpoints"));
    if (!folder.isEmpty()) compareSeries(folder);
  });
  connect(export_, &QPushButton::clicked, this, &FrequenciesPanel::exportDialog);
  connect(layer_, qOverload<int>(&QSpinBox::valueChanged), this, [this] {
    // The input's decomposition holds one layer: another layer is decomposed anew.
    if (probe_ && probe_->from_input && !probe_->find(probe_->curves, layer_->value(), -1))
      decomposeInput();
    else
      showSelection();
  });
  connect(per_head_, &QCheckBox::toggled, this, &FrequenciesPanel::showSelection);
  connect(view_, qOverload<int>(&QComboBox::currentIndexChanged), this, [this](int i) { showMap(i == 1); });
  connect(map_component_, qOverload<int>(&QSpinBox::valueChanged), this, [this] {
    if (showingMap()) showComponentMap();
  });
  connect(difference_, &QCheckBox::toggled, plot_, &FrequencyPlot::setDifference);
  connect(x_axis_, qOverload<int>(&QComboBox::currentIndexChanged), this, [this](int i) {
    plot_->setXAxis(i == 0 ? FrequencyPlot::XAxis::Position : FrequencyPlot::XAxis::Distance);
  });
  connect(components_, &QLineEdit::editingFinished, this, [this] {
    std::vector<int> chosen;
    for (const auto& part : components_->text().split(',', Qt::SkipEmptyParts)) {
      bool ok = false;
      const int c = part.trimmed().toInt(&ok);
      if (ok) chosen.push_back(c);
    }
    plot_->setShownComponents(chosen.empty() ? plot_->defaultComponents() : chosen);
  });
  connect(&session, &Session::modelOpened, this, &FrequenciesPanel::onModelOpened);
  connect(&session, &Session::headSelected, this, [this](int layer, int head) {
    selected_head_ = head;
    if (layer >= 0 && layer <= layer_->maximum()) layer_->setValue(layer);
    showSelection();
  });

  connect(&session, &Session::busyChanged, this, [this](bool busy) {
    run_->setEnabled(!busy && model_open_);
    input_->setEnabled(!busy && model_rotates_);
  });
  onModelOpened();
}

void FrequenciesPanel::onModelOpened() {
  probe_.reset();
  series_result_.reset();
  plot_->setCurves({});
  plot_->setOverlay({});
  plot_->setSeries({});
  map_->clear();
  const ModelSummary model = session().model();
  model_open_ = session().hasModel();
  model_rotates_ = session().hasModel() && model.rotary;
  input_->setEnabled(model_rotates_);
  layer_->setMaximum(std::max(0, model.n_layers - 1));
  if (model.train_length >= 2 && model.train_length <= 4096) length_->setValue(model.train_length);
  series_folder_ = model.series_folder;
  series_->setEnabled(!series_folder_.isEmpty());
  series_->setToolTip(series_folder_.isEmpty()
                          ? tr("The open checkpoint is not a step-NNNNNN folder of a run")
                          : tr("VAF against training step over %1").arg(series_folder_));
  run_->setEnabled(session().hasModel());
  if (!session().hasModel()) return;
  info_->setText(model.rotary
                     ? tr("Rotary model, training length L=%1: run the probe (T=%2 by default).")
                           .arg(model.train_length)
                           .arg(length_->value())
                     : tr("This model does not rotate q and k: the probe shows its logits by "
                          "position, without rotary components."));
  emit figureChanged();
}

ProbeRequest FrequenciesPanel::request() const {
  ProbeRequest r;
  r.length = length_->value();
  r.samples = samples_->value();
  r.extrapolate_to = extrapolate_->value();
  return r;
}

void FrequenciesPanel::showProbe(const std::any& result) {
  probe_ = std::any_cast<FrequencySummary>(result);
  fitComponentBox();
  series_result_.reset();
  plot_->setSeries({});
  showSelection();
  emit figureChanged();
}

void FrequenciesPanel::runProbe() {
  const auto r = request();
  if (!session().ready(tr("Nothing to probe"), false)) return;
  if (r.length < 2) {
    emit session().failed(tr("Cannot probe"), tr("The probe needs T of at least 2 tokens."));
    return;
  }
  // "probe": a decomposition or a newer probe replaces it (one curve set is shown).
  session().submit(QStringLiteral("probe"), tr("Probing T=%1…").arg(r.length), probe_job(r),
                   [this](const std::any& result) { showProbe(result); });
}

void FrequenciesPanel::decomposeInput() {
  if (!session().ready(tr("Nothing to decompose"), true)) return;
  const int layer = layer_->value();
  session().submit(QStringLiteral("probe"), tr("Decomposing layer %1…").arg(layer),
                   decompose_job(session().input(), layer),
                   [this](const std::any& result) { showProbe(result); });
}

void FrequenciesPanel::compareSeries(const QString& folder) {
  const QString target = folder.isEmpty() ? series_folder_ : folder;
  if (target.isEmpty() || !session().ready(tr("Nothing to compare"), false)) return;
  session().submit(QStringLiteral("compare"),
                   tr("Comparing the checkpoints of %1…").arg(QFileInfo(target).fileName()),
                   compare_job(target, request()), [this](const std::any& result) {
                     const auto summary = std::any_cast<SeriesSummary>(result);
                     series_result_ = summary;
                     probe_ = summary.last;
                     showSelection();
                     emit figureChanged();
                   });
}

void FrequenciesPanel::showFile(const SeriesSummary& summary) {
  layer_->setRange(0, std::max(summary.last.n_layers - 1, 0));
  probe_ = summary.last;
  fitComponentBox();
  if (probe_->from_input) {  // a decomposition holds one layer: show it
    const QSignalBlocker quiet(layer_);
    layer_->setValue(probe_->maps.layer);
  }
  if (summary.per_layer.empty()) {
    series_result_.reset();
    plot_->setSeries({});
  } else {
    series_result_ = summary;
  }
  showSelection();
  emit figureChanged();
}

void FrequenciesPanel::fitComponentBox() {
  if (probe_ && probe_->maps.n_components > 0)
    map_component_->setMaximum(static_cast<int>(probe_->maps.n_components - 1));
}

bool FrequenciesPanel::showingMap() const { return views_->currentWidget() == map_; }

void FrequenciesPanel::showMap(bool on, int component) {
  if (component >= 0) {  // kept until maps arrive; fitComponentBox() then clamps it
    const QSignalBlocker quiet(map_component_);
    map_component_->setMaximum(std::max(map_component_->maximum(), component));
    map_component_->setValue(component);
  }
  {
    const QSignalBlocker quiet(view_);
    view_->setCurrentIndex(on ? 1 : 0);
  }
  views_->setCurrentWidget(on ? static_cast<QWidget*>(map_) : plot_);
  map_component_->setEnabled(on);
  showSelection();
  emit figureChanged();
}

void FrequenciesPanel::showComponentMap() {
  const ComponentMaps* maps = probe_ && probe_->from_input ? &probe_->maps : nullptr;
  if (!maps || maps->layer != layer_->value()) {
    map_->clear();
    info_->setText(model_rotates_ ? tr("The component map shows the input's scores split by rotary component: "
                                       "press On input.")
                                  : tr("This model does not rotate q and k: there are no components to map."));
    return;
  }
  int head = per_head_->isChecked() ? selected_head_ : -1;
  QString note = QString::fromStdString(maps->note);
  if (!maps->has(head) && maps->has(-1)) {
    if (note.isEmpty()) note = tr("head %1 was not decomposed; showing the head mean").arg(head);
    head = -1;
  }
  const HeatmapData map = component_map(*maps, head, map_component_->value());
  if (map.rows == 0) {
    map_->clear();
    info_->setText(note);
    return;
  }
  map_->setHeatmap(map);
  info_->setText(tr("%1 tokens · each cell is q_c·R(θ_c (i − j))·k_c, scaled as the scores (Chen et al. 2024 eq. 4)%2")
                     .arg(maps->T)
                     .arg(note.isEmpty() ? QString() : QStringLiteral(" · ") + note));
}

void FrequenciesPanel::showSelection() {
  if (showingMap()) {
    showComponentMap();
    return;
  }
  if (!probe_) return;
  const int layer = layer_->value();
  const int head = per_head_->isChecked() ? selected_head_ : -1;
  const FrequencyCurves* curves = probe_->find(probe_->curves, layer, head);
  QString note = probe_->note;
  if (!curves && head >= 0) {  // per-head curves not sent (too large): the head mean
    curves = probe_->find(probe_->curves, layer, -1);
    note += tr(" · per-head curves too large to send; showing the head mean");
  }
  if (!curves) return;
  plot_->setCurves(*curves);
  const FrequencyCurves* overlay = probe_->find(probe_->overlay, layer, curves->head);
  plot_->setOverlay(overlay ? *overlay : FrequencyCurves{});
  if (series_result_ && layer < static_cast<int>(series_result_->per_layer.size())) {
    const auto l = static_cast<size_t>(layer);
    // Other checkpoints' curves are head means: drawn under the head mean only.
    plot_->setSeries(series_result_->per_layer[l],
                     curves->head < 0 ? series_result_->checkpoint_curves[l]
                                      : std::vector<FrequencyCurves>{});
  }
  QString activated;
  for (int c = 0; c < curves->n_components(); ++c)
    if (curves->activated[static_cast<size_t>(c)]) activated += QStringLiteral(" c%1").arg(c);
  info_->setText(tr("%1 · %2 · activated band (π/L, 2π/L), L=%3:%4")
                     .arg(QString::fromStdString(curves->title), note)
                     .arg(curves->L)
                     .arg(activated.isEmpty() ? tr(" none") : activated));
}

bool FrequenciesPanel::hasFigure() const {
  return showingMap() ? map_->hasHeatmap() : plot_->hasCurves() || plot_->hasSeries();
}

bool FrequenciesPanel::exportFigure(const QString& path, FigureFormat format, QString* error) {
  const bool png = format == FigureFormat::Png;
  if (showingMap()) return map_->exportFigure(path, format, error, png ? 1100 : 0, png ? 1000 : 0);
  return plot_->exportFigure(path, format, error, png ? 1400 : 0, png ? 1000 : 0);
}

bool FrequenciesPanel::exportData(const QString& path, QStringList* written, QString* error) {
  if (!showingMap()) return plot_->exportCsv(path, written, error);
  if (!map_->exportCsv(path, error)) return false;
  if (written) *written = QStringList{path};
  return true;
}

void FrequenciesPanel::exportDialog() {
  if (!hasFigure()) {
    QMessageBox::information(widget_, tr("Nothing to export"),
                             showingMap() ? tr("Press On input first.") : tr("Run the probe first."));
    return;
  }
  QString filter;
  QString path = QFileDialog::getSaveFileName(
      widget_, tr("Export frequency figure or data"), QStringLiteral("frequencies.png"),
      tr("PNG image (*.png);;PDF (*.pdf);;SVG (*.svg);;CSV data (*.csv)"), &filter);
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty())  // a name without suffix: the chosen filter's
    path += filter.mid(filter.indexOf(QStringLiteral("*.")) + 1).chopped(1);
  QString error;
  bool ok = false;
  if (path.endsWith(QStringLiteral(".csv"), Qt::CaseInsensitive)) {
    QStringList written;
    ok = exportData(path, &written, &error);
    if (ok) info_->setText(tr("Wrote %1").arg(written.join(QStringLiteral(", "))));
  } else {
    ok = exportFigure(path, figureFormatForPath(path), &error);
    if (ok) info_->setText(tr("Wrote %1").arg(path));
  }
  if (!ok) QMessageBox::critical(widget_, tr("Export failed"), error);
}

}  // namespace poslens::gui
