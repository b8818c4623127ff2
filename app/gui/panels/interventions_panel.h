#pragma once
// Interventions panel (left dock): run the open model with position mechanisms moved or removed
// — p-RoPE, head temperatures, the first token masked as a key, massive activations zeroed or
// set to their means, learned sinks removed — without
// touching the checkpoint (analysis/interventions.h; poslens-cli's --intervene). Apply sends
// them to the Session (Session::setInterventions); every view then shows the intervened model,
// and every analysis result and file names what it ran with. Reset restores the checkpoint.
#include <QStringList>

#include "app/gui/panels/panel.h"

class QCheckBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;

namespace poslens::gui {

struct ModelSummary;

/// The --intervene specs of the panel's fields: "p-rope=P" when p > 0, one "temperature=…" per
/// entry of `temperatures` (entries such as "L3H1:2" or "L5:0.5", separated by commas or
/// spaces), "mask-first-key", "massive=zero", "massive=mean:FILE" when `massive_means` names a
/// massive-activations file, "no-sinks". Checking them is the worker's (parse_interventions).
QStringList intervention_specs(double p_rope, const QString& temperatures, bool mask_first_key, bool zero_massive,
                               bool no_sinks, const QString& massive_means = {});

class InterventionsPanel : public Panel {
  Q_OBJECT
 public:
  explicit InterventionsPanel(Session& session);
  QString title() const override { return tr("Interventions"); }
  QString id() const override { return QStringLiteral("interventions"); }
  Placement placement() const override { return Placement::Left; }
  QWidget* widget() override { return widget_; }

 private:
  void onModelOpened(const ModelSummary& model);
  void apply();
  /// The fields showing `specs` (Session::interventions()); empty: "no intervention".
  void showSpecs(const QStringList& specs);

  QWidget* widget_ = nullptr;
  QDoubleSpinBox* p_rope_ = nullptr;
  QLineEdit* temperatures_ = nullptr;
  QCheckBox* mask_first_key_ = nullptr;
  QCheckBox* zero_massive_ = nullptr;
  QLineEdit* massive_means_ = nullptr;  ///< a massive-activations file: "massive=mean:FILE"
  QPushButton* browse_means_ = nullptr;
  QCheckBox* no_sinks_ = nullptr;
  QPushButton* apply_ = nullptr;
  QPushButton* reset_ = nullptr;
  QLabel* status_ = nullptr;
};

}  // namespace poslens::gui
