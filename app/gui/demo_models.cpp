#include "app/gui/demo_models.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

namespace poslens::gui {
namespace {

// A Flip-Flop string (instruction, bit pairs; the last read asks for the last written bit, 0)
// with long runs of ignores, and a few fortunes in the corpus's own block format.
const char* kFlipFlopSample = "w1i0i1i1r1i0i0w0i1i1i0i1i0i1r0i1i0i1i1i0i0i1r0";
const char* kTextSample =
    "Q: How many programmers does it take to change a light bulb?\n"
    "A: None, that's a hardware problem.\n%\nThe best way to predict the future is to invent it.\n";

DemoModel demo(const QString& name, const QString& path) {
  DemoModel d{name, path, {}, {}};
  d.text = QString::fromUtf8(name.startsWith("flipflop") ? kFlipFlopSample : kTextSample);
  d.view = name.contains("cope") ? "hook_cope_gates" : "hook_pattern";
  return d;
}

}  // namespace

QString demoModelsDir() {
  const QString env = qEnvironmentVariable("POSLENS_DEMOS_DIR");
  if (!env.isEmpty()) return env;
  // Installed (/usr/bin/poslens -> /usr/share/poslens/demos) first, so an installed GUI never
  // shows the demos of a source tree that happens to sit where it was built.
  const QString installed =
      QDir(QCoreApplication::applicationDirPath()).filePath("../share/poslens/demos");
  if (QFileInfo(installed).isDir()) return QDir::cleanPath(installed);
#ifdef POSLENS_DEMOS_DIR
  if (QFileInfo(POSLENS_DEMOS_DIR).isDir()) return POSLENS_DEMOS_DIR;
#endif
  return QDir::cleanPath(installed);
}

std::vector<DemoModel> findDemoModels(const QString& dir) {
  std::vector<DemoModel> demos;
  const QDir root(dir);
  for (const auto& name : root.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name)) {
    const QDir folder(root.filePath(name));
    if (folder.exists("config.json")) {
      demos.push_back(demo(name, folder.absolutePath()));
      continue;
    }
    for (const auto& step : folder.entryList({"step-*"}, QDir::Dirs, QDir::Name))
      if (QDir(folder.filePath(step)).exists("config.json"))
        demos.push_back(demo(name + "/" + step, folder.absoluteFilePath(step)));
  }
  return demos;
}

}  // namespace poslens::gui
