#pragma once
// Helpers shared by the GUI tests: waiting for queued signals from the worker thread.
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QMetaObject>
#include <QSemaphore>
#include <QSignalSpy>
#include <QTest>

#include <memory>

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

/// Keeps the event loop running for `ms`: whatever stale signal could still come has come.
inline void settle(int ms = 300) { QTest::qWait(ms); }

}  // namespace poslens::gui::test
