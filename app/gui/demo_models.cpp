#include "app/gui/demo_models.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>

namespace poslens::gui {
namespace {

// A sample input per task, in the task's notation (core/train/<task>.cpp):
// - Flip-Flop: instruction, bit pairs with long runs of ignores; the last read asks for the last
//   written bit, 0.
// - counting: a program as the task draws them (one variable, w_pass 50, left-padded with
//   <pad> as in training: the pads matter, without them the demo model undercounts), ending in
//   "print a" at the position training asks for the value: 5, the increments since the second
//   set (the three before it must not count). Layer 1 head 1's CoPE gates count `a`, `=`, `0`,
//   `++` and skip `pass`, `;` and the pads (docs/experiments.md).
// - selective copy: 16 letters among 16 blanks (the default task's shape), the separator, the
//   first 12 letters copied; the next is L.
// - text (characters or BPE): a few fortunes in the corpus's own block format.
const char* kFlipFlopSample = "w1i0i1i1r1i0i0w0i1i1i0i1i0i1r0i1i0i1i1i0i0i1r0";
const char* kCountingSample =
    "<pad> <pad> <pad> a = 0 ; a ++ ; pass ; pass ; pass ; pass ; pass ; pass ; pass ; a ++ ; "
    "a ++ ; pass ; pass ; pass ; a = 0 ; pass ; pass ; pass ; pass ; pass ; a ++ ; a ++ ; "
    "pass ; pass ; pass ; pass ; pass ; a ++ ; pass ; pass ; pass ; pass ; pass ; pass ; pass "
    "; pass ; a ++ ; pass ; pass ; pass ; pass ; pass ; pass ; a ++ ; pass ; pass ; pass ; "
    "pass ; pass ; pass ; pass ; pass ; pass ; pass ; pass ; print a";
const char* kSelectiveCopySample = "D.B.C..FA..E...H.GKJN....ML..IAB|DBCFAEHGKJNM";
const char* kTextSample =
    "Q: How many programmers does it take to change a light bulb?\n"
    "A: None, that's a hardware problem.\n%\nThe best way to predict the future is to invent it.\n";

/// The task a model was trained on, from its config.json's "training" record (written by
/// `poslens-cli train`); empty when the file or the record is missing.
QString trained_task(const QString& folder) {
  QFile file(QDir(folder).filePath("config.json"));
  if (!file.open(QIODevice::ReadOnly)) return {};
  const auto training = QJsonDocument::fromJson(file.read(1 << 20)).object().value("training");
  return training.toObject().value("task").toString();
}

QString sample_for(const QString& task) {
  if (task == "flipflop") return kFlipFlopSample;
  if (task == "counting") return kCountingSample;
  if (task == "selective_copy") return kSelectiveCopySample;
  return QString::fromUtf8(kTextSample);
}

DemoModel demo(const QString& name, const QString& path) {
  DemoModel d{name, path, {}, {}};
  QString task = trained_task(path);
  if (task.isEmpty() && name.startsWith("flipflop")) task = "flipflop";
  d.text = sample_for(task);
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
