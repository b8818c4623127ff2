// Torch-side headers first: Qt's `slots` macro must not meet them.
#include "app/cli/figures.h"

#include <torch/torch.h>

#include "analysis/frequency_curves.h"
#include "analysis/heatmap_pooling.h"
#include "core/runtime/model_input.h"
#include "core/runtime/transformer.h"
#include "core/base/error.h"

#ifdef POSLENS_CLI_FIGURES
#include <QApplication>
#include <filesystem>
#include <memory>

#include "widgets/curve_plot.h"
#include "widgets/figure_export.h"
#include "widgets/frequency_plot.h"
#include "widgets/heatmap_view.h"
#endif

namespace poslens::cli {
namespace {

#ifdef POSLENS_CLI_FIGURES
/// A QApplication for drawing offscreen (no display needed), made once.
void ensure_application() {
  if (QApplication::instance()) return;
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  static int argc = 1;
  static char name[] = "poslens-cli";
  static char* argv[] = {name, nullptr};
  static auto app = std::make_unique<QApplication>(argc, argv);
}

void write(const std::string& path, const FrequencyCurves& curves, const VafSeries& series,
           const std::vector<FrequencyCurves>& checkpoint_curves = {},
           const FrequencyCurves& overlay = {}, bool difference = false) {
  ensure_application();
  FrequencyPlot plot;
  plot.resize(1500, 700);
  plot.setCurves(curves);
  plot.setOverlay(overlay);
  plot.setSeries(series, checkpoint_curves);
  plot.setDifference(difference);
  const QString file = QString::fromStdString(path);
  QString error;
  if (!plot.exportFigure(file, figureFormatForPath(file), &error, 1500, 700))
    throw Error(error.toStdString());
}

std::string name_of(const std::string& checkpoint) {
  return std::filesystem::path(checkpoint).filename().string();
}
#else
[[noreturn]] void unavailable() {
  throw Error("this poslens-cli was built without Qt (POSLENS_BUILD_GUI=OFF), so --figure is "
              "unavailable; the HDF5 output has every number");
}
[[noreturn]] void write(const std::string&, const FrequencyCurves&, const VafSeries&,
                        const std::vector<FrequencyCurves>& = {}, const FrequencyCurves& = {}, bool = false) {
  unavailable();
}
std::string name_of(const std::string& checkpoint) { return checkpoint; }
#endif

#ifdef POSLENS_CLI_FIGURES
void write_side_by_side(const std::string& path, const std::vector<HeatmapData>& maps,
                        const std::vector<double>& fractions = {}) {
  ensure_application();
  std::vector<std::unique_ptr<HeatmapView>> views;
  std::vector<QCustomPlot*> plots;
  std::string title;
  for (const auto& map : maps) {
    views.push_back(std::make_unique<HeatmapView>());
    views.back()->resize(1000, 950);
    views.back()->setHeatmap(map);
    plots.push_back(views.back()->plot());
    title += (title.empty() ? "" : " | ") + map.title;
  }
  const QString file = QString::fromStdString(path);
  QString error;
  const bool png = figureFormatForPath(file) == FigureFormat::Png;
  const int width = png ? 1200 : 0;  // per plot
  if (!exportPlotsSideBySide(plots, file, figureFormatForPath(file), width, png ? 1100 : 0,
                             QString::fromStdString(title), &error, fractions))
    throw Error(error.toStdString());
}
#else
[[noreturn]] void write_side_by_side(const std::string&, const std::vector<HeatmapData>&,
                                     const std::vector<double>& = {}) {
  unavailable();
}
#endif

}  // namespace

void write_map_pair_figure(const std::string& path, const HeatmapData& left, const HeatmapData& right) {
  write_side_by_side(path, {left, right});
}

void write_maps_figure(const std::string& path, const std::vector<HeatmapData>& maps) {
  write_side_by_side(path, maps);
}

void write_curves_figure(const std::string& path, const CurveSet& curves) {
#ifdef POSLENS_CLI_FIGURES
  ensure_application();
  CurvePlot plot;
  plot.resize(1400, 700);
  plot.setCurves(curves);
  const QString file = QString::fromStdString(path);
  QString error;
  if (!plot.exportFigure(file, figureFormatForPath(file), &error, 1400, 700)) throw Error(error.toStdString());
#else
  (void)path;
  (void)curves;
  unavailable();
#endif
}

void write_probe_figure(const std::string& path, const ProbeResult& probe,
                        const std::string& checkpoint, const ProbeResult* extrapolation, int layer) {
  write(path, probe_curves(probe, layer, -1, name_of(checkpoint)), {}, {},
        extrapolation ? probe_curves(*extrapolation, layer, -1, name_of(checkpoint))
                      : FrequencyCurves{});
}

void write_frequencies_figure(const std::string& path, const TextDecomposition& d,
                              const std::string& checkpoint) {
  write(path, text_curves(d, 0, name_of(checkpoint)), {});
}

void write_compare_figure(const std::string& path, const CompareResult& compare, bool difference, int layer) {
  std::vector<FrequencyCurves> each;
  for (size_t i = 0; i < compare.probes.size(); ++i)
    each.push_back(probe_curves(compare.probes[i], layer, -1, name_of(compare.names[i])));
  write(path, each.back(), compare_series(compare, layer), each, {}, difference);
}

void write_position_figure(const std::string& path, const at::Tensor& pattern,
                           const at::Tensor& position, const std::vector<std::string>& labels,
                           int layer, int head, const std::string& method,
                           const std::string& checkpoint, const at::Tensor& sink_share) {
  const int64_t T = static_cast<int64_t>(labels.size());
  const auto labelled = [&](HeatmapData d) {
    for (const auto& label : labels) d.row_labels.push_back(display_label(label));
    d.layer = layer;
    d.head = head;
    return d;
  };
  auto map = [&](const at::Tensor& pooled, const std::string& what) {
    auto d = labelled(heatmap_from_pooled(pooled, T, T));
    d.col_labels = d.row_labels;
    d.title = name_of(checkpoint) + "  L" + std::to_string(layer) + " H" + std::to_string(head) + " " + what;
    d.value_name = "weight / row max";
    d.kind = HeatmapKind::Probability;
    return d;
  };
  if (!sink_share.defined()) {
    write_side_by_side(path, {map(pattern, "pattern"), map(position, "position only (" + method + ")")});
    return;
  }
  const auto sink = labelled(sink_share_heatmap(sink_share, T));
  write_side_by_side(path, {map(pattern, "pattern"), sink, map(position, "position only (" + method + ")")},
                     {1.0, 0.3, 1.0});
}

}  // namespace poslens::cli
