#pragma once
// Helpers shared by the GUI tests: waiting for queued signals from the worker thread.
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QMetaObject>
#include <QSemaphore>
#include <QSignalSpy>
#include <QTest>

#include <memory>

#include "app/gui/session.h"
#include "fixtures.h"

namespace poslens::gui::test {

using ::poslens::test::scratch_dir;
using ::poslens::test::stories_dir;

inline QString stories() {
  return QString::fromStdString((::poslens::test::stories_dir() / "stories260K.bin").string());
}

/// Waits until `spy` has recorded `count` signals, then lets queued slots handle them.
/// (QSignalSpy::wait alone misses a signal the worker thread emitted before wait() started.)
inline bool arrived(QSignalSpy& spy, int timeout_ms, int count = 1) {
  QElapsedTimer clock;
  clock.start();
  while (spy.count() < count && clock.elapsed() < timeout_ms) QTest::qWait(10);
  QCoreApplication::processEvents();
  return spy.count() >= count;
}

/// Holds the worker's thread until open() (or destruction): jobs the session sends meanwhile
/// wait in the worker's event queue, so a test can cancel a job before it starts whatever the
/// machine's load. (Without it, loading the small stories260K can finish between open() and
/// cancel() on a busy machine, and the test would test nothing.)
class WorkerGate {
 public:
  explicit WorkerGate(QObject* worker) : gate_(std::make_shared<QSemaphore>(0)) {
    auto gate = gate_;
    QMetaObject::invokeMethod(worker, [gate] { gate->acquire(); }, Qt::QueuedConnection);
  }
  ~WorkerGate() { open(); }
  WorkerGate(const WorkerGate&) = delete;
  WorkerGate& operator=(const WorkerGate&) = delete;
  void open() {
    if (!opened_) gate_->release();
    opened_ = true;
  }

 private:
  std::shared_ptr<QSemaphore> gate_;
  bool opened_ = false;
};

/// Returns once every job `session` sent has run and its signals have been handled: a barrier
/// through the worker's event queue (every job posted before it has run and emitted), then the
/// GUI thread's queued slots — repeated while the session is busy and twice more, since those
/// slots may send further jobs (a run's head maps). Deterministic where waiting a fixed time
/// was not. The worker must not be held by a WorkerGate.
inline void settle(Session& session) {
  for (int quiet = 0; quiet < 2;) {
    QMetaObject::invokeMethod(session.worker(), [] {}, Qt::BlockingQueuedConnection);
    QCoreApplication::sendPostedEvents();
    QCoreApplication::processEvents();
    quiet = session.isBusy() ? 0 : quiet + 1;
  }
}

}  // namespace poslens::gui::test
