// poslens: the desktop GUI.
// `poslens [CHECKPOINT] [--text TEXT] [--run] [--view HOOK] [--probe | --series]
// [--positions LAYER,HEAD] [--component-map C] [--intervene SPEC]... [--analysis FILE.h5]`.
#include <QApplication>
#include <QCommandLineParser>

#include <cstdio>

#include "app/gui/main_window.h"
#include "app/gui/panels/frequencies_panel.h"
#include "core/base/compute_setup.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName("PosLens");
  QApplication::setApplicationName("PosLens");
  QApplication::setApplicationVersion(POSLENS_VERSION);

  QCommandLineParser parser;
  parser.setApplicationDescription("PosLens: see how transformers use position.");
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument("checkpoint",
                               "llama2.c .bin, .safetensors, torch.save .pt/.bin, or an HF or "
                               "PosLens folder to open");
  QCommandLineOption text({"t", "text"}, "Input text", "text");
  QCommandLineOption decoder_text(QStringList{"decoder-text"},
                                  "Encoder–decoder models (T5): the decoder's input after its start token",
                                  "text");
  QCommandLineOption run({"r", "run"}, "Run the model as soon as it is loaded");
  QCommandLineOption view(QStringList{"view"},
                          "Per-head map to show: hook_pattern (default), hook_attn_scores, "
                          "hook_pos_scores, hook_cope_gates or hook_cope_pos",
                          "hook");
  QCommandLineOption probe(QStringList{"probe"},
                           "Run the RoPE U-shape probe (Frequencies panel) once loaded");
  QCommandLineOption series(QStringList{"series"},
                            "Compare the checkpoints of the run folder the checkpoint is in "
                            "(VAF against training step) once loaded");
  QCommandLineOption positions(QStringList{"positions"},
                               "Compute head LAYER,HEAD's pattern | position-only maps once "
                               "loaded (Position map panel)",
                               "layer,head");
  QCommandLineOption component_map(QStringList{"component-map"},
                                   "Show rotary component C's term over every query and key (Frequencies "
                                   "panel): of the input, decomposed once loaded, or of an --analysis file "
                                   "of poslens-cli frequencies",
                                   "c");
  QCommandLineOption analysis(QStringList{"analysis"},
                              "Show an analysis file poslens-cli wrote (Analyses panel; no model needed)",
                              "file.h5");
  QCommandLineOption intervene(QStringList{"intervene"},
                               "Run the checkpoint with an intervention (repeatable; as poslens-cli's): "
                               "p-rope=P, temperature=LxHy:T, no-sinks, mask-first-key, massive=zero, massive=mean:FILE",
                               "spec");
  parser.addOption(intervene);
  parser.addOption(analysis);
  parser.addOption(component_map);
  parser.addOption(positions);
  parser.addOption(probe);
  parser.addOption(series);
  parser.addOption(text);
  parser.addOption(decoder_text);
  parser.addOption(run);
  parser.addOption(view);
  parser.process(app);

  int map_component = -1;
  if (parser.isSet(component_map)) {
    bool ok = false;
    map_component = parser.value(component_map).toInt(&ok);
    if (!ok || map_component < 0) {
      std::fprintf(stderr, "poslens: --component-map wants a component number (0, 1, ...), got '%s'\n",
                   qPrintable(parser.value(component_map)));
      return 2;
    }
  }

  poslens::set_up_compute();
  poslens::gui::MainWindow window;
  window.show();
  if (map_component >= 0) window.panel<poslens::gui::FrequenciesPanel>()->showMap(true, map_component);
  if (parser.isSet(text)) window.setInputText(parser.value(text));
  if (parser.isSet(decoder_text)) window.setDecoderText(parser.value(decoder_text));
  if (parser.isSet(view)) window.setPreferredView(parser.value(view));
  if (parser.isSet(analysis)) window.openAnalysis(parser.value(analysis));
  if (!parser.positionalArguments().isEmpty()) {
    if (parser.isSet(run)) window.runWhenLoaded();
    if (parser.isSet(intervene)) window.interveneWhenLoaded(parser.values(intervene));
    if (parser.isSet(probe) || parser.isSet(series)) window.probeWhenLoaded(parser.isSet(series));
    else if (map_component >= 0) window.decomposeWhenLoaded();
    if (parser.isSet(positions)) {
      const QStringList parts = parser.value(positions).split(',');
      bool ok_layer = false, ok_head = false;
      const int layer = parts.value(0).toInt(&ok_layer), head = parts.value(1).toInt(&ok_head);
      if (parts.size() != 2 || !ok_layer || !ok_head || layer < 0 || head < 0) {
        std::fprintf(stderr, "poslens: --positions wants LAYER,HEAD (e.g. 1,0), got '%s'\n",
                     qPrintable(parser.value(positions)));
        return 2;
      }
      window.positionsWhenLoaded(layer, head);
    }
    window.openCheckpoint(parser.positionalArguments().first());
  }
  return app.exec();
}
