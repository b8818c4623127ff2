#pragma once
// Input panel (left dock): the text or token ids, the device and dtype for the next open,
// which captures an HDF5 export writes, Run/Cancel, per-layer progress and the run's message.
#include "app/gui/panels/panel.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;

namespace poslens::gui {

class InputPanel : public Panel {
  Q_OBJECT
 public:
  explicit InputPanel(Session& session);
  QString title() const override { return tr("Input"); }
  QString id() const override { return QStringLiteral("input"); }
  Placement placement() const override { return Placement::Left; }
  QWidget* widget() override { return widget_; }

 private:
  void buildExportChoice();
  void pushInput();
  void onBusyChanged(bool busy);

  QWidget* widget_ = nullptr;
  QPlainTextEdit* text_ = nullptr;
  QCheckBox* token_ids_ = nullptr;
  QPushButton* open_text_ = nullptr;  ///< reads the input from a file (Session::openInputText)
  QLineEdit* decoder_text_ = nullptr;  ///< shown for encoder–decoder models only
  QComboBox* export_choice_ = nullptr;
  QLineEdit* export_custom_ = nullptr;
  QComboBox* device_ = nullptr;
  QComboBox* dtype_ = nullptr;
  QPushButton* run_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* message_ = nullptr;
};

}  // namespace poslens::gui
