#pragma once
// The PosLens main window: places the panels (panels/panel_list.cpp), owns the menus, the
// recent-files list, drag and drop, the status bar and the one error dialog. All state and
// model work live in the Session; the window knows no panel's insides.
#include <QMainWindow>

#include <optional>
#include <utility>

#include <memory>
#include <vector>

#include "app/gui/demo_models.h"
#include "app/gui/session.h"

class QAction;
class QMenu;

namespace poslens::gui {

class Panel;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  /// Starts loading `path` (file or HF folder) on the worker thread. A run folder of step-*
  /// checkpoints opens its last checkpoint and compares the series (Frequencies panel).
  void openCheckpoint(const QString& path);
  /// Shows an analysis file poslens-cli wrote in the Analyses panel, without a model.
  void openAnalysis(const QString& path);
  /// Shows and raises the dock of the panel with `id`.
  void raiseDock(const QString& id);
  /// Sets the input text (used by the command line).
  void setInputText(const QString& text);
  /// An encoder–decoder model's decoder text (after its start token).
  void setDecoderText(const QString& text);
  /// Runs the input once the next model is loaded (used by the command line).
  void runWhenLoaded() { run_when_loaded_ = true; }
  /// Applies the interventions `specs` (Session::setInterventions) once the next model is
  /// loaded, before whatever else is to happen then (the command line's --intervene).
  void interveneWhenLoaded(const QStringList& specs) { intervene_when_loaded_ = specs; }
  /// Runs the U-shape probe at T = L (or, with `series`, compares the run folder's
  /// checkpoints) once the next model is loaded (the command line's --probe / --series).
  void probeWhenLoaded(bool series) { probe_when_loaded_ = series ? ProbeOnLoad::Series : ProbeOnLoad::Probe; }
  /// Decomposes the input by rotary component (the Frequencies panel's On input) once loaded.
  void decomposeWhenLoaded() { probe_when_loaded_ = ProbeOnLoad::Decompose; }
  /// Selects head (`layer`, `head`) and computes its pattern | position-only maps once the next
  /// model is loaded, with the Position map tab raised (the command line's --positions).
  void positionsWhenLoaded(int layer, int head) { positions_when_loaded_ = {layer, head}; }
  /// Selects the view with hook suffix `view` (e.g. "hook_cope_gates") once a model that has
  /// it is loaded (used by the command line).
  void setPreferredView(const QString& view) { session_->setPreferredView(view); }

  /// Opens a demo checkpoint with its sample input, runs it and shows its view.
  void openDemo(const DemoModel& demo);

  Session* session() const { return session_.get(); }
  /// The panels, in createPanels() order (tests find their widgets through these).
  const std::vector<std::unique_ptr<Panel>>& panels() const { return panels_; }
  /// The panel of type P, or null.
  template <class P>
  P* panel() const {
    for (const auto& p : panels_)
      if (auto* found = qobject_cast<P*>(p.get())) return found;
    return nullptr;
  }

 protected:
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;
  void closeEvent(QCloseEvent* event) override;

 private:
  void placePanels();
  void buildMenus();
  void buildDemoMenu();
  void connectSession();
  void updateActions();
  void addRecent(const QString& path);
  void refreshRecentMenu();
  void showError(const QString& title, const QString& message);
  void exportFigure(const QString& suffix);
  void exportCaptures();

  // Declared first so it is destroyed last: panels hold a reference to it.
  std::unique_ptr<Session> session_;
  std::vector<std::unique_ptr<Panel>> panels_;
  Panel* figure_panel_ = nullptr;  ///< the central panel: the one File ▸ Export figure writes
  QMenu* recent_menu_ = nullptr;
  QMenu* view_menu_ = nullptr;
  std::vector<QAction*> figure_actions_;
  QAction* export_h5_ = nullptr;
  bool run_when_loaded_ = false;
  QStringList intervene_when_loaded_;
  enum class ProbeOnLoad { None, Probe, Series, Decompose } probe_when_loaded_ = ProbeOnLoad::None;
  std::optional<std::pair<int, int>> positions_when_loaded_;
};

}  // namespace poslens::gui
