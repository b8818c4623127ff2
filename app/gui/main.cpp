// poslens: the desktop GUI. `poslens [CHECKPOINT] [--text TEXT] [--run]`.
#include <QApplication>
#include <QCommandLineParser>

#include "app/gui/main_window.h"
#include "app/gui/torch_threads.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName("PosLens");
  QApplication::setApplicationName("PosLens");
  QApplication::setApplicationVersion(POSLENS_VERSION);

  QCommandLineParser parser;
  parser.setApplicationDescription("PosLens: see how transformers use position.");
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument("checkpoint", "llama2.c .bin, .safetensors or HF folder to open");
  QCommandLineOption text({"t", "text"}, "Input text", "text");
  QCommandLineOption run({"r", "run"}, "Run the model as soon as it is loaded");
  parser.addOption(text);
  parser.addOption(run);
  parser.process(app);

  poslens::gui::use_all_cores_for_torch();
  poslens::gui::MainWindow window;
  window.show();
  if (parser.isSet(text)) window.setInputText(parser.value(text));
  if (!parser.positionalArguments().isEmpty()) {
    if (parser.isSet(run)) window.runWhenLoaded();
    window.openCheckpoint(parser.positionalArguments().first());
  }
  return app.exec();
}
