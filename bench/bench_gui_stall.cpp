// The longest stall of the GUI thread's event loop while a user works (the goal: "the GUI thread
// never stalls > 100 ms"). A timer on the GUI thread fires every 2 ms; the longest gap between
// two firings is how long the event loop could not run. Steps: open CHECKPOINT, run N tokens
// (random ids), switch through every view and 20 heads without waiting, open the Position map
// on a head, start the probe and cancel it once it reports progress. A figure for
// docs/reliability.md, not a test: timings are never pass/fail.
//
//   xvfb-run -a -s '-screen 0 1600x1000x24' build/bench/poslens_bench_gui_stall CHECKPOINT [N]
#include <QApplication>
#include <QComboBox>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTest>
#include <QTimer>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>

#include "app/gui/main_window.h"
#include "app/gui/panels/frequencies_panel.h"
#include "app/gui/panels/position_map_panel.h"
#include "app/gui/session.h"
#include "core/base/compute_setup.h"

namespace {

using poslens::gui::Session;

/// Records, per step, the longest gap between two firings of a 2 ms timer on the GUI thread.
class StallMonitor {
 public:
  StallMonitor() {
    timer_.setTimerType(Qt::PreciseTimer);
    timer_.setInterval(2);
    QObject::connect(&timer_, &QTimer::timeout, [this] {
      const double gap_ms = since_.nsecsElapsed() / 1e6;
      since_.start();
      auto& longest = longest_[step_];
      longest = std::max(longest, gap_ms);
      if (gap_ms > 100) ++over_100_ms_;
    });
    since_.start();
    timer_.start();
  }
  void step(const std::string& name) {
    step_ = name;
    order_.push_back(name);
  }
  void report() const {
    double overall = 0;
    for (const auto& name : order_) {
      const double ms = longest_.count(name) ? longest_.at(name) : 0;
      overall = std::max(overall, ms);
      std::printf("  %-40s longest stall %7.1f ms\n", name.c_str(), ms);
    }
    std::printf("longest stall overall: %.1f ms; gaps over 100 ms: %d\n", overall, over_100_ms_);
  }

 private:
  QTimer timer_;
  QElapsedTimer since_;
  std::string step_ = "start";
  std::vector<std::string> order_;
  std::map<std::string, double> longest_;
  int over_100_ms_ = 0;
};

/// Handles events until `spy` has `count` signals (at most `timeout_s`); false on timeout.
bool wait_for(QSignalSpy& spy, int count, double timeout_s) {
  QElapsedTimer clock;
  clock.start();
  while (spy.count() < count && clock.elapsed() < timeout_s * 1000) QTest::qWait(5);
  return spy.count() >= count;
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CHECKPOINT [TOKENS]\n", argv[0]);
    return 2;
  }
  poslens::set_up_compute();
  const int n_tokens = argc > 2 ? std::atoi(argv[2]) : 2048;
  poslens::gui::MainWindow window;
  window.resize(1600, 1000);
  window.show();
  Session& session = *window.session();
  QSignalSpy opened(&session, &Session::modelOpened), finished(&session, &Session::runFinished),
      head(&session, &Session::headReady), jobs(&session, &Session::jobFinished),
      progress(&session, &Session::progress), cancelled(&session, &Session::cancelled),
      failed(&session, &Session::failed);
  StallMonitor monitor;
  auto fail = [&](const char* what) {
    std::fprintf(stderr, "%s%s\n", what,
                 failed.isEmpty() ? "" : (": " + failed.at(0).at(1).toString().toStdString()).c_str());
    return 1;
  };

  monitor.step("open the model");
  window.openCheckpoint(QString::fromLocal8Bit(argv[1]));
  if (!wait_for(opened, 1, 600)) return fail("open failed");

  monitor.step("run " + std::to_string(n_tokens) + " tokens");
  std::mt19937 rng(1);
  QStringList ids;
  for (int i = 0; i < n_tokens; ++i) ids << QString::number(3 + rng() % 500);
  session.setInput({ids.join(','), true});
  session.run();
  if (!wait_for(finished, 1, 1800) || !wait_for(head, 1, 600)) return fail("run failed");

  monitor.step("switch every view, no waiting");
  auto* views = window.findChild<QComboBox*>(QStringLiteral("viewSelector"));
  for (int i = 0; i < views->count(); ++i) {
    views->setCurrentIndex(i);  // each re-runs; newer runs replace queued ones
    QCoreApplication::processEvents();
  }
  views->setCurrentIndex(0);
  while (session.isBusy()) QTest::qWait(5);

  monitor.step("switch 20 heads, no waiting");
  const int layers = session.model().n_layers, heads = session.model().n_heads;
  const int heads_before = head.count();
  for (int i = 1; i <= 20; ++i) {
    session.selectHead((i * 3) % layers, (i * 5) % heads);
    QCoreApplication::processEvents();
  }
  wait_for(head, heads_before + 1, 600);
  QTest::qWait(500);  // the replaced requests' leftovers, if any

  monitor.step("Position map on a head");
  const int jobs_before = jobs.count();
  window.panel<poslens::gui::PositionMapPanel>()->compute();
  if (!wait_for(jobs, jobs_before + 1, 1800)) return fail("position map failed");

  monitor.step("probe, cancelled at its first progress");
  const int progress_before = progress.count();
  window.panel<poslens::gui::FrequenciesPanel>()->runProbe();
  if (!wait_for(progress, progress_before + 1, 600)) return fail("the probe reported no progress");
  session.cancel();
  if (!wait_for(cancelled, 1, 60)) return fail("cancel was not acknowledged");
  QTest::qWait(500);

  monitor.step("idle");
  QTest::qWait(200);
  monitor.report();
  return failed.isEmpty() ? 0 : fail("a step failed");
}
