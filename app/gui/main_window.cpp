#include "app/gui/main_window.h"

#include <QAction>
#include <QCloseEvent>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QDir>
#include <QFileInfo>
#include <QMap>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QSettings>
#include <QStatusBar>

#include <algorithm>
#include <numeric>

#include "analysis/checkpoint_series.h"
#include "app/gui/panels/analyses_panel.h"
#include "app/gui/panels/frequencies_panel.h"
#include "app/gui/panels/panel_list.h"
#include "app/gui/panels/position_map_panel.h"
#include "core/base/error.h"
#include "widgets/figure_export.h"

namespace poslens::gui {
namespace {

constexpr int kMaxRecent = 8;

Qt::DockWidgetArea dockArea(Panel::Placement placement) {
  switch (placement) {
    case Panel::Placement::Right: return Qt::RightDockWidgetArea;
    case Panel::Placement::Bottom: return Qt::BottomDockWidgetArea;
    default: return Qt::LeftDockWidgetArea;
  }
}

}  // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent), session_(std::make_unique<Session>()) {
  setWindowTitle(tr("PosLens"));
  setAcceptDrops(true);
  resize(1500, 950);
  panels_ = createPanels(*session_);
  buildMenus();  // before placing: the View menu lists the docks
  placePanels();
  connectSession();
  updateActions();
}

MainWindow::~MainWindow() = default;

void MainWindow::placePanels() {
  QDockWidget* left = nullptr;
  QDockWidget* right = nullptr;
  QDockWidget* bottom = nullptr;
  QList<QDockWidget*> stacked_left;
  for (const auto& panel : panels_) {
    connect(panel.get(), &Panel::figureChanged, this, &MainWindow::updateActions);
    if (panel->placement() == Panel::Placement::Central) {
      setCentralWidget(panel->widget());
      if (!figure_panel_) figure_panel_ = panel.get();
      continue;
    }
    auto* dock = new QDockWidget(panel->title(), this);
    dock->setObjectName(panel->id());
    dock->setWidget(panel->widget());
    addDockWidget(dockArea(panel->placement()), dock);
    view_menu_->addAction(dock->toggleViewAction());
    if (panel->placement() == Panel::Placement::Left) stacked_left << dock;
    if (panel->placement() == Panel::Placement::Left && !left) left = dock;
    if (panel->placement() == Panel::Placement::Right && !right) right = dock;
    if (panel->placement() == Panel::Placement::Bottom) {
      if (bottom) tabifyDockWidget(bottom, dock);  // bottom panels share the area as tabs
      else bottom = dock;
    }
  }
  if (bottom) bottom->raise();
  if (bottom) resizeDocks({bottom}, {480}, Qt::Vertical);
  if (right) resizeDocks({right}, {520}, Qt::Horizontal);
  if (left) resizeDocks({left}, {330}, Qt::Horizontal);
  // Stacked docks start at their widgets' preferred heights (the rest goes to the first), so
  // a form-like panel does not take half the column with empty space.
  if (stacked_left.size() > 1) {
    QList<int> heights;
    for (auto* dock : stacked_left) heights << dock->widget()->sizeHint().height();
    heights[0] = std::max(heights[0], height() - 150 - std::accumulate(heights.begin() + 1,
                                                                        heights.end(), 0));
    resizeDocks(stacked_left, heights, Qt::Vertical);
  }
}

void MainWindow::buildMenus() {
  auto* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&Open checkpoint file…"), QKeySequence::Open, this, [this] {
    const auto path = QFileDialog::getOpenFileName(
        this, tr("Open checkpoint"), {},
        tr("Checkpoints (*.bin *.safetensors *.pt *.json);;All files (*)"));
    if (!path.isEmpty()) openCheckpoint(path);
  });
  file->addAction(tr("Open checkpoint &folder…"), QKeySequence("Ctrl+Shift+O"), this, [this] {
    const auto path =
        QFileDialog::getExistingDirectory(this, tr("Open checkpoint folder (HF or PosLens)"));
    if (!path.isEmpty()) openCheckpoint(path);
  });
  recent_menu_ = file->addMenu(tr("Open &recent"));
  refreshRecentMenu();
  file->addAction(tr("Open &analysis…"), QKeySequence("Ctrl+Shift+A"), this, [this] {
    const auto path = QFileDialog::getOpenFileName(this, tr("Open analysis (written by poslens-cli)"), {},
                                                   tr("PosLens analysis (*.h5 *.hdf5);;All files (*)"));
    if (!path.isEmpty()) openAnalysis(path);
  });
  file->addSeparator();
  for (const char* suffix : {"png", "pdf", "svg"}) {
    const QString s = QString::fromLatin1(suffix);
    figure_actions_.push_back(file->addAction(tr("Export figure as %1…").arg(s.toUpper()), this,
                                              [this, s] { exportFigure(s); }));
  }
  export_h5_ = file->addAction(tr("Export captures as &HDF5…"), QKeySequence("Ctrl+E"), this,
                               &MainWindow::exportCaptures);
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
  buildDemoMenu();
  view_menu_ = menuBar()->addMenu(tr("&View"));
}

void MainWindow::openAnalysis(const QString& path) {
  auto* analyses = panel<AnalysesPanel>();
  if (!analyses) return;
  raiseDock(analyses->id());
  analyses->openFile(path);
}

void MainWindow::raiseDock(const QString& id) {
  if (auto* dock = findChild<QDockWidget*>(id)) {
    dock->show();
    dock->raise();
  }
}

void MainWindow::buildDemoMenu() {
  auto* menu = menuBar()->addMenu(tr("&Demo models"));
  menu->setObjectName("demoMenu");
  const auto demos = findDemoModels(demoModelsDir());
  if (demos.empty()) {
    menu->addAction(tr("No demo models found in %1").arg(demoModelsDir()))->setEnabled(false);
    return;
  }
  QMap<QString, QMenu*> series;  // "text-rope-series/step-…" entries share a submenu
  for (const auto& demo : demos) {
    QMenu* into = menu;
    QString label = demo.name;
    if (const int slash = demo.name.indexOf('/'); slash > 0) {
      const QString group = demo.name.left(slash);
      if (!series.contains(group)) series[group] = menu->addMenu(group);
      into = series[group];
      label = demo.name.mid(slash + 1);
    }
    into->addAction(label, this, [this, demo] { openDemo(demo); });
  }
}

void MainWindow::openDemo(const DemoModel& demo) {
  setInputText(demo.text);
  setPreferredView(demo.view);
  runWhenLoaded();
  openCheckpoint(demo.path);
}

void MainWindow::connectSession() {
  Session* s = session_.get();
  // A probe or comparison file opened in the Analyses panel is shown by the Frequencies panel.
  if (auto* analyses = panel<AnalysesPanel>(); analyses && panel<FrequenciesPanel>())
    connect(analyses, &AnalysesPanel::frequencyFileOpened, this, [this](const SeriesSummary& summary) {
      panel<FrequenciesPanel>()->showFile(summary);
      raiseDock(panel<FrequenciesPanel>()->id());
    });
  if (auto* analyses = panel<AnalysesPanel>(); analyses && panel<PositionMapPanel>())
    connect(analyses, &AnalysesPanel::positionFileOpened, this, [this](const PositionView& view) {
      panel<PositionMapPanel>()->showFile(view);
      raiseDock(panel<PositionMapPanel>()->id());
    });
  connect(s, &Session::busyChanged, this, [this](bool busy, const QString& what) {
    if (busy)
      statusBar()->showMessage(what);
    else
      statusBar()->clearMessage();
    updateActions();
  });
  connect(s, &Session::modelOpened, this, [this](const ModelSummary& model) {
    setWindowTitle(tr("PosLens — %1").arg(QFileInfo(model.path).fileName()) +
                   (model.interventions.isEmpty() ? QString() : tr(" — with %1").arg(model.interventions)));
    addRecent(model.path);
    updateActions();
    if (!intervene_when_loaded_.isEmpty()) {  // the run, probe, … wait for the intervened model
      session_->setInterventions(std::exchange(intervene_when_loaded_, {}));
      return;
    }
    if (run_when_loaded_) {
      run_when_loaded_ = false;
      session_->run();
    }
    if (probe_when_loaded_ != ProbeOnLoad::None) {
      // The Frequencies panel has already taken the model's training length as T.
      if (auto* frequencies = panel<FrequenciesPanel>()) {
        if (probe_when_loaded_ == ProbeOnLoad::Series && !model.series_folder.isEmpty())
          frequencies->compareSeries(model.series_folder);
        else if (probe_when_loaded_ == ProbeOnLoad::Decompose)
          frequencies->decomposeInput();
        else
          frequencies->runProbe();
      }
      probe_when_loaded_ = ProbeOnLoad::None;
    }
    if (positions_when_loaded_) {
      const auto [layer, head] = *positions_when_loaded_;
      positions_when_loaded_.reset();
      session_->selectHead(layer, head);
      if (auto* positions = panel<PositionMapPanel>()) positions->compute();
      if (auto* dock = findChild<QDockWidget*>(QStringLiteral("position_map"))) dock->raise();
    }
  });
  connect(s, &Session::runFinished, this, &MainWindow::updateActions);
  connect(s, &Session::runCleared, this, &MainWindow::updateActions);
  connect(s, &Session::failed, this, &MainWindow::showError);
  connect(s, &Session::cancelled, this, [this](const QString& tag) {
    statusBar()->showMessage(tag == "open" ? tr("Loading cancelled") : tr("Cancelled"), 5000);
  });
  connect(s, &Session::exported, this, [this](const QString& path) {
    statusBar()->showMessage(tr("Wrote %1").arg(path), 8000);
  });
}

void MainWindow::updateActions() {
  const bool figure = figure_panel_ && figure_panel_->hasFigure();
  for (auto* action : figure_actions_) action->setEnabled(figure);
  export_h5_->setEnabled(session_->lastRun().has_value());
}

void MainWindow::openCheckpoint(const QString& path) {
  // A run folder (step-NNNNNN checkpoints, no model of its own): its last checkpoint, with the
  // series compared in the Frequencies panel once it is loaded.
  if (QFileInfo(path).isDir() && !QDir(path).exists(QStringLiteral("config.json"))) {
    try {
      const auto steps = series_checkpoints(path.toStdString());
      if (steps.size() >= 2) {
        probe_when_loaded_ = ProbeOnLoad::Series;
        session_->open(QString::fromStdString(steps.back()));
        return;
      }
    } catch (const Error&) {  // not a run folder: open it as given (and report what it is)
    }
  }
  session_->open(path);
}

void MainWindow::setInputText(const QString& text) {
  auto input = session_->input();
  input.text = text;
  session_->setInput(input);
}

void MainWindow::setDecoderText(const QString& text) {
  auto input = session_->input();
  input.decoder_text = text;
  session_->setInput(input);
}

void MainWindow::showError(const QString& title, const QString& message) {
  // Window-modal but not blocking: the event loop (and the worker's signals) keep running.
  auto* box = new QMessageBox(QMessageBox::Critical, title, message, QMessageBox::Ok, this);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();
}

void MainWindow::exportFigure(const QString& suffix) {
  if (!figure_panel_) return;
  const auto path = QFileDialog::getSaveFileName(this, tr("Export figure"), "attention." + suffix,
                                                 suffix.toUpper() + " (*." + suffix + ")");
  if (path.isEmpty()) return;
  QString error;
  if (!figure_panel_->exportFigure(path, figureFormatForPath("x." + suffix), &error))
    showError(tr("Export failed"), error);
  else
    statusBar()->showMessage(tr("Wrote %1").arg(path), 8000);
}

void MainWindow::exportCaptures() {
  const auto path = QFileDialog::getSaveFileName(this, tr("Export captures"), "captures.h5",
                                                 tr("HDF5 (*.h5 *.hdf5)"));
  if (!path.isEmpty()) session_->exportCaptures(path);
}

void MainWindow::addRecent(const QString& path) {
  QSettings settings;
  auto recent = settings.value("recentCheckpoints").toStringList();
  recent.removeAll(path);
  recent.prepend(path);
  while (recent.size() > kMaxRecent) recent.removeLast();
  settings.setValue("recentCheckpoints", recent);
  refreshRecentMenu();
}

void MainWindow::refreshRecentMenu() {
  recent_menu_->clear();
  const auto recent = QSettings().value("recentCheckpoints").toStringList();
  for (const auto& path : recent)
    recent_menu_->addAction(path, this, [this, path] { openCheckpoint(path); });
  recent_menu_->setEnabled(!recent.isEmpty());
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  const auto urls = event->mimeData()->urls();
  if (!urls.isEmpty() && urls.first().isLocalFile()) openCheckpoint(urls.first().toLocalFile());
}

void MainWindow::closeEvent(QCloseEvent* event) {
  session_->cancel();  // stop a long run now rather than in the destructor's wait
  QMainWindow::closeEvent(event);
}

}  // namespace poslens::gui
