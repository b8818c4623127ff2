#include "app/gui/main_window.h"

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QCloseEvent>
#include <QComboBox>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QSignalBlocker>
#include <QStatusBar>
#include <QVBoxLayout>

#include "widgets/head_grid.h"
#include "widgets/heatmap_view.h"

namespace poslens::gui {
namespace {
constexpr int kMaxRecent = 8;
constexpr int kHeatmapCells = 1024;  // larger maps are max-pooled before drawing

QString viewLabel(const QString& suffix) {
  if (suffix == "hook_pattern") return QObject::tr("Attention pattern");
  if (suffix == "hook_attn_scores") return QObject::tr("Attention logits (pre-softmax)");
  if (suffix == "hook_pos_scores") return QObject::tr("Position scores (position-only logit term)");
  if (suffix == "hook_cope_gates") return QObject::tr("CoPE gates");
  if (suffix == "hook_cope_pos") return QObject::tr("CoPE contextual positions");
  return suffix;
}
}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(tr("PosLens"));
  setAcceptDrops(true);
  resize(1500, 950);

  heatmap_ = new HeatmapView(this);
  setCentralWidget(heatmap_);
  buildDocks();
  buildMenus();

  worker_ = new InferenceWorker;
  worker_->moveToThread(&thread_);
  connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
  connect(this, &MainWindow::requestOpen, worker_, &InferenceWorker::openCheckpoint);
  connect(this, &MainWindow::requestRun, worker_, &InferenceWorker::run);
  connect(this, &MainWindow::requestHead, worker_, &InferenceWorker::requestHead);
  connect(this, &MainWindow::requestExport, worker_, &InferenceWorker::exportCaptures);
  connect(worker_, &InferenceWorker::opened, this, &MainWindow::onOpened);
  connect(worker_, &InferenceWorker::runFinished, this, &MainWindow::onRunFinished);
  connect(worker_, &InferenceWorker::failed, this, &MainWindow::onFailed);
  connect(worker_, &InferenceWorker::headReady, heatmap_, &HeatmapView::setHeatmap);
  connect(worker_, &InferenceWorker::progress, this, [this](int done, int total) {
    progress_->setRange(0, total);
    progress_->setValue(done);
  });
  connect(worker_, &InferenceWorker::cancelled, this, [this] {
    setBusy(false, {});
    statusBar()->showMessage(tr("Run cancelled"), 5000);
  });
  connect(worker_, &InferenceWorker::exported, this, [this](const QString& path) {
    setBusy(false, {});
    statusBar()->showMessage(tr("Wrote %1").arg(path), 8000);
  });
  connect(grid_, &HeadGrid::headSelected, this, [this](int layer, int head) {
    emit requestHead(layer, head, kHeatmapCells, currentView());
  });
  connect(view_, &QComboBox::currentIndexChanged, this, [this] {
    if (has_run_) run();  // the new view's tensors are captured by a fresh run
  });
  thread_.start();
  setBusy(false, {});
}

MainWindow::~MainWindow() {
  worker_->requestCancel();
  thread_.quit();
  thread_.wait();
}

void MainWindow::buildDocks() {
  // Model: what is loaded.
  model_info_ = new QLabel(tr("No checkpoint open.\n\nFile ▸ Open, or drop a file here."));
  model_info_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  model_info_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  model_info_->setFont(QFont("monospace", 9));
  model_info_->setWordWrap(true);
  model_info_->setContentsMargins(8, 6, 8, 6);
  auto* model_dock = new QDockWidget(tr("Model"), this);
  model_dock->setObjectName("model");
  auto* model_scroll = new QScrollArea;  // long descriptions scroll instead of being cut
  model_scroll->setWidget(model_info_);
  model_scroll->setWidgetResizable(true);
  model_scroll->setFrameShape(QFrame::NoFrame);
  model_dock->setWidget(model_scroll);
  addDockWidget(Qt::LeftDockWidgetArea, model_dock);

  // Input: text or ids, run options, Run/Cancel with progress.
  auto* input_panel = new QWidget;
  auto* layout = new QVBoxLayout(input_panel);
  input_ = new QPlainTextEdit(tr("Once upon a time, there was a little girl named Lily."));
  input_->setPlaceholderText(tr("Text to run the model on"));
  input_->setMaximumHeight(110);
  token_ids_ = new QCheckBox(tr("Input is comma-separated token ids"));
  captures_ = new QLineEdit("*");
  captures_->setToolTip(tr("Hook names or globs to capture for export, comma-separated "
                           "(attention patterns are always captured)"));
  device_ = new QComboBox;
  device_->addItems({"auto", "cpu", "cuda"});
  dtype_ = new QComboBox;
  dtype_->addItems({"float32", "bfloat16", "float16"});
  auto* form = new QFormLayout;
  form->addRow(tr("Capture"), captures_);
  form->addRow(tr("Device"), device_);
  form->addRow(tr("Dtype"), dtype_);
  run_button_ = new QPushButton(tr("Run"));
  run_button_->setShortcut(QKeySequence("Ctrl+Return"));
  cancel_button_ = new QPushButton(tr("Cancel"));
  progress_ = new QProgressBar;
  progress_->setTextVisible(true);
  run_message_ = new QLabel;
  run_message_->setWordWrap(true);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(run_button_);
  buttons->addWidget(cancel_button_);
  layout->addWidget(input_);
  layout->addWidget(token_ids_);
  layout->addLayout(form);
  layout->addLayout(buttons);
  layout->addWidget(progress_);
  layout->addWidget(run_message_);
  layout->addStretch();
  connect(run_button_, &QPushButton::clicked, this, &MainWindow::run);
  connect(cancel_button_, &QPushButton::clicked, this, &MainWindow::cancel);
  auto* input_dock = new QDockWidget(tr("Input"), this);
  input_dock->setObjectName("input");
  input_dock->setWidget(input_panel);
  addDockWidget(Qt::LeftDockWidgetArea, input_dock);

  // Heads: what to show, then layers x heads thumbnails.
  view_ = new QComboBox;
  view_->setToolTip(tr("Which per-head map the thumbnails and the centre view show"));
  grid_ = new HeadGrid;
  auto* heads_panel = new QWidget;
  auto* heads_layout = new QVBoxLayout(heads_panel);
  heads_layout->setContentsMargins(0, 0, 0, 0);
  auto* show_row = new QFormLayout;
  show_row->setContentsMargins(8, 4, 8, 0);
  show_row->addRow(tr("Show"), view_);
  heads_layout->addLayout(show_row);
  heads_layout->addWidget(grid_, 1);
  auto* grid_dock = new QDockWidget(tr("Heads (layers × heads)"), this);
  grid_dock->setObjectName("heads");
  grid_dock->setWidget(heads_panel);
  addDockWidget(Qt::RightDockWidgetArea, grid_dock);
  resizeDocks({grid_dock}, {520}, Qt::Horizontal);
  resizeDocks({model_dock}, {330}, Qt::Horizontal);
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
  file->addSeparator();
  export_png_ = file->addAction(tr("Export figure as &PNG…"), this, [this] { exportFigure("png"); });
  export_pdf_ = file->addAction(tr("Export figure as P&DF…"), this, [this] { exportFigure("pdf"); });
  export_h5_ = file->addAction(tr("Export captures as &HDF5…"), QKeySequence("Ctrl+E"), this,
                               &MainWindow::exportCaptures);
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

  auto* view = menuBar()->addMenu(tr("&View"));
  view->addAction(tr("&Reset zoom"), QKeySequence("Ctrl+0"), heatmap_, &HeatmapView::resetView);
  for (auto* dock : findChildren<QDockWidget*>()) view->addAction(dock->toggleViewAction());
}

void MainWindow::openCheckpoint(const QString& path) {
  setBusy(true, tr("Loading %1…").arg(QFileInfo(path).fileName()));
  emit requestOpen(path, device_->currentText(), dtype_->currentText());
}

void MainWindow::setInputText(const QString& text) { input_->setPlainText(text); }

void MainWindow::run() {
  if (!model_loaded_) {
    onFailed(tr("Nothing to run"), tr("Open a checkpoint first (File ▸ Open)."));
    return;
  }
  const QString text = input_->toPlainText();
  if (text.trimmed().isEmpty()) {
    onFailed(tr("Nothing to run"), tr("The input is empty: type some text or token ids."));
    return;
  }
  worker_->setLatestGeneration(++generation_);
  setBusy(true, tr("Running…"));
  emit requestRun(generation_, text, token_ids_->isChecked(), captures_->text(), currentView());
}

QString MainWindow::currentView() const {
  const auto view = view_->currentData().toString();
  return view.isEmpty() ? QStringLiteral("hook_pattern") : view;
}

void MainWindow::cancel() { worker_->requestCancel(); }

void MainWindow::setBusy(bool busy, const QString& what) {
  run_button_->setEnabled(!busy && model_loaded_);
  cancel_button_->setEnabled(busy);
  export_png_->setEnabled(!busy && has_run_);
  export_pdf_->setEnabled(!busy && has_run_);
  export_h5_->setEnabled(!busy && has_run_);
  progress_->setVisible(busy);
  if (busy) {
    progress_->setRange(0, 0);  // indeterminate until the first layer reports
    statusBar()->showMessage(what);
  } else {
    statusBar()->clearMessage();
  }
}

void MainWindow::onOpened(const ModelSummary& summary) {
  model_loaded_ = true;
  has_run_ = false;
  model_info_->setText(summary.description);
  setWindowTitle(tr("PosLens — %1").arg(QFileInfo(summary.path).fileName()));
  token_ids_->setChecked(!summary.has_tokenizer);
  if (!summary.has_tokenizer)
    run_message_->setText(tr("This model has no supported tokenizer: enter token ids."));
  grid_->clear();
  heatmap_->clear();
  {
    const QSignalBlocker quiet(view_);  // a new model is not a request to re-run
    view_->clear();
    for (const auto& view : summary.views) view_->addItem(viewLabel(view), view);
    if (const int preferred = view_->findData(preferred_view_); preferred >= 0)
      view_->setCurrentIndex(preferred);
  }
  addRecent(summary.path);
  setBusy(false, {});
  if (run_when_loaded_) {
    run_when_loaded_ = false;
    run();
  }
}

void MainWindow::onRunFinished(const RunSummary& summary) {
  if (summary.generation != generation_) return;  // a newer run was started meanwhile
  has_run_ = true;
  const auto [layer, head] = grid_->selectedHead();
  grid_->setHeads(summary.n_layers, summary.n_heads, summary.thumbnails);
  grid_->fitThumbnailsToWidth();
  const bool keep = layer >= 0 && layer < summary.n_layers && head >= 0 && head < summary.n_heads;
  {
    const QSignalBlocker quiet(grid_);  // the request below refreshes the map exactly once
    grid_->selectHead(keep ? layer : 0, keep ? head : 0);
  }
  emit requestHead(keep ? layer : 0, keep ? head : 0, kHeatmapCells, currentView());
  run_message_->setText(summary.message);
  setBusy(false, {});
}

void MainWindow::onFailed(const QString& title, const QString& message) {
  setBusy(false, {});
  // Window-modal but not blocking: the event loop (and the worker's signals) keep running.
  auto* box = new QMessageBox(QMessageBox::Critical, title, message, QMessageBox::Ok, this);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();
}

void MainWindow::exportFigure(const QString& format) {
  const auto path = QFileDialog::getSaveFileName(this, tr("Export figure"), "attention." + format,
                                                 format.toUpper() + " (*." + format + ")");
  if (path.isEmpty()) return;
  QString error;
  const bool ok = format == "png" ? heatmap_->exportPng(path, 1600, 1400, &error)
                                  : heatmap_->exportPdf(path, &error);
  if (!ok)
    onFailed(tr("Export failed"), error);
  else
    statusBar()->showMessage(tr("Wrote %1").arg(path), 8000);
}

void MainWindow::exportCaptures() {
  const auto path = QFileDialog::getSaveFileName(this, tr("Export captures"), "captures.h5",
                                                 tr("HDF5 (*.h5 *.hdf5)"));
  if (path.isEmpty()) return;
  setBusy(true, tr("Writing %1…").arg(path));
  emit requestExport(path);
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
  worker_->requestCancel();
  QMainWindow::closeEvent(event);
}

}  // namespace poslens::gui
