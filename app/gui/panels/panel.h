#pragma once
// Panel: one part of the main window (a dock or the centre) that shows and edits Session
// state. MainWindow only places panels (panels/panel_list.cpp says which); each panel builds
// its widget and connects itself to the Session in its constructor. Adding an analysis panel
// means writing a Panel subclass and adding one line to createPanels().
#include <QObject>
#include <QString>

class QWidget;

namespace poslens {
enum class FigureFormat;
}

namespace poslens::gui {

class Session;

class Panel : public QObject {
  Q_OBJECT
 public:
  /// Where the main window puts a panel. Exactly one panel should be Central.
  enum class Placement { Central, Left, Right, Bottom };

  explicit Panel(Session& session, QObject* parent = nullptr) : QObject(parent), session_(session) {}
  ~Panel() override = default;

  /// The dock title (also the View menu entry).
  virtual QString title() const = 0;
  /// Stable id for saved window state ("model", "input", ...).
  virtual QString id() const = 0;
  virtual Placement placement() const = 0;
  /// The panel's widget; the main window re-parents it into a dock or the centre.
  virtual QWidget* widget() = 0;

  /// True when the panel shows a figure that exportFigure() can write now.
  virtual bool hasFigure() const { return false; }
  /// Writes the panel's figure to `path` in `format`; false with `*error` set on failure
  /// (default: the panel has no figure).
  virtual bool exportFigure(const QString& path, FigureFormat format, QString* error);

 signals:
  /// hasFigure() may have changed (the main window enables its export actions).
  void figureChanged();

 protected:
  Session& session() const { return session_; }

 private:
  Session& session_;
};

}  // namespace poslens::gui
