// Entry point of poslens_widget_tests: a QApplication (widgets need one) around GoogleTest.
// Without a display (CI, gtest discovery at build time) Qt runs on the offscreen platform.
#include <gtest/gtest.h>

#include <QApplication>

#include <cstdlib>

int main(int argc, char** argv) {
  const bool platform_set = !qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM");
  const bool display = !qEnvironmentVariableIsEmpty("DISPLAY") ||
                       !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY");
  if (!platform_set && !display) qputenv("QT_QPA_PLATFORM", "offscreen");
  testing::InitGoogleTest(&argc, argv);
  QApplication app(argc, argv);
  return RUN_ALL_TESTS();
}
