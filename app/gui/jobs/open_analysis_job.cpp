// File ▸ Open analysis…: an HDF5 file the CLI wrote, read first in a child process (which hands
// back its strings, so this process never reads them from the file), its version checked, then
// read by the reader for what it holds (analysis_file_readers.h).
#include "app/gui/worker_context.h"

#include "app/gui/jobs/jobs.h"

#include <QDateTime>
#include <QFileInfo>

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "analysis/analysis_registry.h"
#include "app/gui/jobs/analysis_file_readers.h"
#include "app/gui/jobs/analysis_view_builders.h"
#include "core/base/error.h"
#include "core/formats/hdf5_check.h"
#include "core/formats/hdf5_reader.h"

namespace poslens::gui {
namespace {

/// Reads the file in a child process first (check_hdf5_in_child: libhdf5 can crash or hang on
/// a hostile file) and returns the strings it read there, for the reader; once per path, size
/// and modification time: changing a captures view's layer or head re-reads a file already
/// checked.
std::shared_ptr<const Hdf5Strings> check_in_child_once(const QString& path, const WorkerContext& ctx) {
  static std::mutex mutex;
  static std::map<std::tuple<QString, qint64, qint64>, std::shared_ptr<const Hdf5Strings>> checked;
  const QFileInfo info(path);
  const auto key = std::make_tuple(info.absoluteFilePath(), info.size(), info.lastModified().toMSecsSinceEpoch());
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = checked.find(key); it != checked.end()) return it->second;
  }
  auto strings = std::make_shared<const Hdf5Strings>(
      check_hdf5_in_child(path.toStdString(), 60, [&ctx] { return ctx.cancelled(); }));
  const std::lock_guard<std::mutex> lock(mutex);
  if (checked.size() >= 16) checked.clear();  // the strings of a few files, not of every one opened
  checked[key] = strings;
  return strings;
}

}  // namespace

Work open_analysis_job(const QString& path, int layer, int head) {
  return [path, layer, head](WorkerContext& ctx) -> std::any {
    const Hdf5Reader file(path.toStdString(), check_in_child_once(path, ctx));
    check_analysis_file_version(file);
    const auto checkpoint = file.string_attribute("/", "checkpoint");
    const auto* entry = analysis_in_file(file);
    if (entry && entry->shown_in == ShownIn::Frequencies) return frequency_file(file, path);
    if (entry && entry->shown_in == ShownIn::PositionMap) return position_file(file);
    auto v = file.exists("/captures") ? captures_view(file, layer, head) : analysis_panel_file(file, stem(checkpoint));
    v.provenance = provenance(checkpoint, file.string_attribute("/", "weights_sha256"), path,
                              file.string_attribute("/", "interventions"));
    return v;
  };
}

}  // namespace poslens::gui
