// Frame time of the Position map panel's side-by-side view (pattern | position-only map, zoom,
// pan and hover linked) at a long input, driven like a user: wheel zoom in, drag pans, wheel zoom
// out, hover sweeps, each sent to the left view as a real Qt event. A frame is one event up to
// the moment both views have replotted and painted (the event queue drained); QCustomPlot's
// own replot time of each view is reported beside it. Not a test: figures go into issue notes.
//
//   xvfb-run -a -s '-screen 0 1600x1000x24' build/bench/poslens_bench_position_view [T] [STEPS]
//
// T (default 4096) tokens; the maps are what the worker sends for T tokens: max-pooled to
// Session::kHeadMapCells per axis, one label per token, causal (NaN above the diagonal).
#include <QApplication>
#include <QElapsedTimer>
#include <QMouseEvent>
#include <QWheelEvent>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "app/gui/panels/position_map_panel.h"
#include "app/gui/session.h"
#include <qcustomplot.h>
#include "widgets/heatmap_view.h"

namespace {

using poslens::HeatmapData;

HeatmapData causal_map(int64_t tokens, int64_t cells, const char* title, std::mt19937& rng) {
  HeatmapData d;
  d.rows = d.cols = std::min(tokens, cells);
  d.source_rows = d.source_cols = tokens;
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  d.values.resize(static_cast<size_t>(d.rows * d.cols));
  for (int64_t r = 0; r < d.rows; ++r)
    for (int64_t c = 0; c < d.cols; ++c)
      d.values[static_cast<size_t>(r * d.cols + c)] = c <= r ? u(rng) : NAN;
  for (int64_t t = 0; t < tokens; ++t) d.row_labels.push_back("tok" + std::to_string(t));
  d.col_labels = d.row_labels;
  d.title = title;
  d.value_name = "weight";
  d.kind = poslens::HeatmapKind::Probability;
  return d;
}

struct Frames {
  std::vector<double> wall_ms, left_ms, right_ms;
  void print(const char* what) const {
    auto stats = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return std::pair{v[v.size() / 2], v.back()};
    };
    const auto [wall_med, wall_max] = stats(wall_ms);
    const auto [left_med, left_max] = stats(left_ms);
    const auto [right_med, right_max] = stats(right_ms);
    std::printf("%-10s %4zu frames  frame median %6.1f ms  max %6.1f ms  |  replot left %5.1f / %5.1f"
                "  right %5.1f / %5.1f ms (median / max)\n",
                what, wall_ms.size(), wall_med, wall_max, left_med, left_max, right_med, right_max);
  }
};

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  const int64_t tokens = argc > 1 ? std::atoll(argv[1]) : 4096;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 40;

  poslens::gui::Session session;
  poslens::gui::PositionMapPanel panel(session);
  QWidget* window = panel.widget();
  window->resize(1600, 700);
  window->show();
  std::mt19937 rng(1);
  poslens::gui::PositionView view;
  view.pattern = causal_map(tokens, poslens::gui::Session::kHeadMapCells, "L0 H0 pattern", rng);
  view.position = causal_map(tokens, poslens::gui::Session::kHeadMapCells, "L0 H0 position only", rng);
  view.method = "rotary";
  view.explanation = "benchmark data";
  emit session.positionsReady(view);
  for (int i = 0; i < 20; ++i) QApplication::processEvents();

  QCustomPlot* left = panel.patternView()->findChild<QCustomPlot*>();
  QCustomPlot* right = panel.positionView()->findChild<QCustomPlot*>();
  const QRect rect = left->axisRect()->rect();
  const QPointF centre = rect.center();

  // One frame: deliver `event` to the left plot, then drain the queue (queued replots, the
  // linked view's replot, paint events) so both views show the new state.
  auto frame = [&](QEvent* event, Frames& out) {
    QElapsedTimer timer;
    timer.start();
    QApplication::sendEvent(left, event);
    for (int i = 0; i < 3; ++i) QApplication::processEvents();
    out.wall_ms.push_back(timer.nsecsElapsed() / 1e6);
    out.left_ms.push_back(left->replotTime());
    out.right_ms.push_back(right->replotTime());
  };
  auto wheel = [&](int delta) {
    return QWheelEvent(centre, left->mapToGlobal(centre), QPoint(), QPoint(0, delta),
                       Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
  };

  std::printf("side-by-side view, %lld tokens shown as %lld x %lld cells per view, %d x %d px\n",
              static_cast<long long>(tokens), static_cast<long long>(view.pattern.rows),
              static_cast<long long>(view.pattern.cols), window->width(), window->height());
  Frames zoom_in, pan, zoom_out, hover;
  for (int s = 0; s < steps; ++s) {
    auto e = wheel(120);
    frame(&e, zoom_in);
  }
  const QCPRange zoomed = left->xAxis->range(), followed = right->xAxis->range();
  QPointF at = centre;
  QMouseEvent press(QEvent::MouseButtonPress, at, left->mapToGlobal(at), Qt::LeftButton,
                    Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(left, &press);
  for (int s = 0; s < steps; ++s) {
    at += QPointF(s < steps / 2 ? 6 : -6, 4);
    QMouseEvent move(QEvent::MouseMove, at, left->mapToGlobal(at), Qt::NoButton, Qt::LeftButton,
                     Qt::NoModifier);
    frame(&move, pan);
  }
  QMouseEvent release(QEvent::MouseButtonRelease, at, left->mapToGlobal(at), Qt::LeftButton,
                      Qt::NoButton, Qt::NoModifier);
  QApplication::sendEvent(left, &release);
  for (int s = 0; s < steps; ++s) {
    auto e = wheel(-120);
    frame(&e, zoom_out);
  }
  for (int s = 0; s < steps; ++s) {
    const QPointF p(rect.left() + rect.width() * (s + 0.5) / steps,
                    rect.top() + rect.height() * (s + 0.5) / steps);
    QMouseEvent move(QEvent::MouseMove, p, left->mapToGlobal(p), Qt::NoButton, Qt::NoButton,
                     Qt::NoModifier);
    frame(&move, hover);
  }
  std::printf("after zoom in: key range left [%.1f, %.1f], right [%.1f, %.1f] (whole map [-0.5, %lld])\n",
              zoomed.lower, zoomed.upper, followed.lower, followed.upper,
              static_cast<long long>(view.pattern.cols) - 1);
  zoom_in.print("zoom in");
  pan.print("pan");
  zoom_out.print("zoom out");
  hover.print("hover");
  return 0;
}
