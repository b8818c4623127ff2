// The GUI at length, driven like a user with the real worker (not a test: figures go into issue
// notes and docs/performance.md). Opens CHECKPOINT, runs it on the text of TEXT_FILE (or on
// TOKENS random ids with --tokens N), shows the Position map tab on one head, switches heads,
// then zooms, pans and hovers the maps with real Qt events. Reports wall times per step, frame
// times, and the process's peak RSS (VmHWM) after each step.
//
//   xvfb-run -a -s '-screen 0 1600x1000x24' build/bench/poslens_bench_gui CHECKPOINT TEXT_FILE [HEADS [PROBE]]
//   ... poslens_bench_gui CHECKPOINT --tokens 4096 [HEADS [PROBE]] [--dtype bfloat16] [--run-only]
//
// --run-only stops after the run (large models, where the probe would take long): open and run,
// with the longest gap between two progress updates of the run.
// HEADS (default 4): how many head switches to time in the Position map tab; PROBE (default the
// panel's 16): rotary models' probe tokens behind the position-only map.
#include <QApplication>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QFile>
#include <QMouseEvent>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTest>
#include <QWheelEvent>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <qcustomplot.h>

#include "app/gui/main_window.h"
#include "app/gui/panels/position_map_panel.h"
#include "app/gui/session.h"
#include "core/base/compute_setup.h"
#include "widgets/heatmap_view.h"

namespace {

using poslens::gui::Session;

/// Peak resident set size of this process so far, in GB (VmHWM of /proc/self/status).
double peak_rss_gb() {
  std::ifstream status("/proc/self/status");
  std::string key;
  long kb = 0;
  std::string unit;
  while (status >> key) {
    if (key == "VmHWM:") {
      status >> kb;
      return kb / 1048576.0;
    }
    std::getline(status, unit);
  }
  return -1;
}

/// Waits (handling events) until `spy` has `count` signals; the seconds it took, or -1.
double wait_for(QSignalSpy& spy, int count, double timeout_s, const QElapsedTimer& since) {
  while (spy.count() < count && since.elapsed() < timeout_s * 1000) QTest::qWait(5);
  return spy.count() >= count ? since.nsecsElapsed() / 1e9 : -1;
}

struct Frames {
  std::vector<double> ms;
  void print(const char* what) const {
    if (ms.empty()) return;
    auto v = ms;
    std::sort(v.begin(), v.end());
    std::printf("  %-9s %3zu frames: median %6.1f ms, max %6.1f ms\n", what, v.size(), v[v.size() / 2], v.back());
  }
};

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s CHECKPOINT (TEXT_FILE | --tokens N) [HEADS [PROBE]] [--dtype DTYPE] [--run-only]\n", argv[0]);
    return 2;
  }
  poslens::set_up_compute();
  const QString checkpoint = QString::fromLocal8Bit(argv[1]);
  int arg = 2;
  poslens::gui::RunInput input;
  if (std::string(argv[arg]) == "--tokens") {
    std::mt19937 rng(1);
    const int n = std::atoi(argv[arg + 1]);
    QStringList ids;
    for (int i = 0; i < n; ++i) ids << QString::number(3 + rng() % 500);
    input = {ids.join(','), true};
    arg += 2;
  } else {
    QFile file(QString::fromLocal8Bit(argv[arg++]));
    if (!file.open(QIODevice::ReadOnly)) return 1;
    input = {QString::fromUtf8(file.readAll()), false};
  }
  QString dtype = QStringLiteral("float32");
  std::vector<std::string> rest(argv + arg, argv + argc);
  for (size_t i = 0; i + 1 < rest.size(); ++i)
    if (rest[i] == "--dtype") {
      dtype = QString::fromStdString(rest[i + 1]);
      rest.erase(rest.begin() + static_cast<long>(i), rest.begin() + static_cast<long>(i) + 2);
      break;
    }
  const auto run_only_flag = std::find(rest.begin(), rest.end(), "--run-only");
  const bool run_only = run_only_flag != rest.end();
  if (run_only) rest.erase(run_only_flag);
  const int switches = rest.size() > 0 ? std::atoi(rest[0].c_str()) : 4;
  const int probe = rest.size() > 1 ? std::atoi(rest[1].c_str()) : -1;

  poslens::gui::MainWindow window;
  window.resize(1600, 1000);
  window.show();
  Session& session = *window.session();
  session.setLoadOptions("cpu", dtype);
  QSignalSpy opened(&session, &Session::modelOpened), finished(&session, &Session::runFinished),
      head(&session, &Session::headReady), jobs(&session, &Session::jobFinished),
      failed(&session, &Session::failed);
  QElapsedTimer clock;

  clock.start();
  window.openCheckpoint(checkpoint);
  const double open_s = wait_for(opened, 1, 600, clock);  // before reading the peak
  std::printf("open:            %6.2f s   peak RSS %.2f GB\n", open_s, peak_rss_gb());
  window.setInputText(input.text);
  if (input.as_token_ids) session.setInput(input);
  // The longest wait between two progress updates of the run: what a user watches.
  QElapsedTimer since_update;
  double longest_gap_s = 0;
  int updates = 0;
  QObject::connect(&session, &Session::progress, [&](int, int) {
    if (updates++ > 0) longest_gap_s = std::max(longest_gap_s, since_update.nsecsElapsed() / 1e9);
    since_update.start();
  });
  clock.start();
  since_update.start();
  session.run();
  const double run_s = wait_for(finished, 1, 1800, clock);
  const double head_s = wait_for(head, 1, 600, clock);
  std::printf("run:             %6.2f s   (first head map at %.2f s)  %s\n", run_s, head_s,
              session.lastRun() ? session.lastRun()->message.toUtf8().constData() : "");
  std::printf("                 peak RSS %.2f GB; %d progress updates, at most %.2f s apart\n", peak_rss_gb(),
              updates, longest_gap_s);
  if (!failed.isEmpty()) {
    std::printf("failed: %s\n", failed.at(0).at(1).toString().toUtf8().constData());
    return 1;
  }
  if (run_only) return 0;

  auto* positions = window.panel<poslens::gui::PositionMapPanel>();
  if (probe >= 0) positions->widget()->findChild<QSpinBox*>()->setValue(probe);
  if (auto* dock = window.findChild<QDockWidget*>(QStringLiteral("position_map"))) dock->raise();
  clock.start();
  positions->compute();
  std::printf("position map:    %6.2f s   (first head: the forward state is reused, the probe runs once)\n",
              wait_for(jobs, 1, 1800, clock));
  std::printf("                 peak RSS %.2f GB\n", peak_rss_gb());
  const int layers = session.model().n_layers, heads = session.model().n_heads;
  for (int i = 1; i <= switches; ++i) {
    const int layer = (i * 3) % layers, h = (i * 5) % heads;
    clock.start();
    session.selectHead(layer, h);  // the head map and the Position map tab follow
    const double map_s = wait_for(jobs, 1 + i, 600, clock);
    std::printf("switch to L%d H%d: position maps %.2f s, head map %.2f s\n", layer, h, map_s,
                wait_for(head, 1 + i, 600, clock));
  }
  std::printf("                 peak RSS %.2f GB\n", peak_rss_gb());

  // Frames: the Position map tab's pattern view (the other view follows), as a user drives it.
  QCustomPlot* plot = positions->patternView()->findChild<QCustomPlot*>();
  const QRect rect = plot->axisRect()->rect();
  const QPointF centre = rect.center();
  auto frame = [&](QEvent* event, Frames& out) {
    QElapsedTimer timer;
    timer.start();
    QApplication::sendEvent(plot, event);
    for (int k = 0; k < 3; ++k) QApplication::processEvents();
    out.ms.push_back(timer.nsecsElapsed() / 1e6);
  };
  auto wheel = [&](int delta) {
    return QWheelEvent(centre, plot->mapToGlobal(centre), QPoint(), QPoint(0, delta), Qt::NoButton,
                       Qt::NoModifier, Qt::NoScrollPhase, false);
  };
  Frames zoom_in, pan, zoom_out, hover;
  for (int s = 0; s < 30; ++s) {
    auto e = wheel(120);
    frame(&e, zoom_in);
  }
  QPointF at = centre;
  QMouseEvent press(QEvent::MouseButtonPress, at, plot->mapToGlobal(at), Qt::LeftButton, Qt::LeftButton,
                    Qt::NoModifier);
  QApplication::sendEvent(plot, &press);
  for (int s = 0; s < 30; ++s) {
    at += QPointF(s < 15 ? 6 : -6, 4);
    QMouseEvent move(QEvent::MouseMove, at, plot->mapToGlobal(at), Qt::NoButton, Qt::LeftButton, Qt::NoModifier);
    frame(&move, pan);
  }
  QMouseEvent release(QEvent::MouseButtonRelease, at, plot->mapToGlobal(at), Qt::LeftButton, Qt::NoButton,
                      Qt::NoModifier);
  QApplication::sendEvent(plot, &release);
  for (int s = 0; s < 30; ++s) {
    const QPointF p(rect.left() + rect.width() * (s + 0.5) / 30, rect.top() + rect.height() * (s + 0.5) / 30);
    QMouseEvent move(QEvent::MouseMove, p, plot->mapToGlobal(p), Qt::NoButton, Qt::NoButton, Qt::NoModifier);
    frame(&move, hover);
  }
  for (int s = 0; s < 30; ++s) {
    auto e = wheel(-120);
    frame(&e, zoom_out);
  }
  std::printf("Position map tab, %lld tokens shown as %lld x %lld cells per view:\n",
              static_cast<long long>(positions->patternView()->heatmap().source_rows),
              static_cast<long long>(positions->patternView()->heatmap().rows),
              static_cast<long long>(positions->patternView()->heatmap().cols));
  zoom_in.print("zoom in");
  pan.print("pan");
  hover.print("hover");
  zoom_out.print("zoom out");

  // The head map: zoom in until the visible part fits the cells, then the region comes back at
  // full resolution.
  auto* view = window.findChild<poslens::HeatmapView*>(QStringLiteral("head_map_view"));
  if (view && view->heatmap().pooled()) {
    QSignalSpy region(&session, &Session::regionReady);
    const auto& map = view->heatmap();
    const double cells = static_cast<double>(map.cols) * 0.4;  // a region of 0.4 × the cells
    clock.start();
    view->setViewRange(0, cells * map.cols / static_cast<double>(map.source_cols),
                       map.rows / 2.0, map.rows / 2.0 + cells * map.rows / static_cast<double>(map.source_rows));
    emit view->viewChanged(0, 1, 0, 1);  // as a user's zoom would
    const double s = wait_for(region, 1, 120, clock);
    std::printf("head map region at full resolution: %.2f s after the zoom (%s)\n", s,
                view->detail() ? "shown" : "not shown");
  }
  std::printf("peak RSS at the end: %.2f GB\n", peak_rss_gb());
  return 0;
}
