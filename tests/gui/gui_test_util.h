#pragma once
// Helpers shared by the GUI tests: waiting for queued signals from the worker thread.
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTest>

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

/// Keeps the event loop running for `ms`: whatever stale signal could still come has come.
inline void settle(int ms = 300) { QTest::qWait(ms); }

}  // namespace poslens::gui::test
