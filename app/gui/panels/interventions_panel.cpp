#include "app/gui/panels/interventions_panel.h"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QVBoxLayout>

#include "app/gui/session.h"

namespace poslens::gui {

QStringList intervention_specs(double p_rope, const QString& temperatures, bool mask_first_key, bool zero_massive,
                               bool no_sinks, const QString& massive_means) {
  QStringList specs;
  if (p_rope > 0) specs << QStringLiteral("p-rope=%1").arg(p_rope);
  for (const auto& entry : temperatures.split(QRegularExpression(QStringLiteral("[,\\s]+")), Qt::SkipEmptyParts))
    specs << QStringLiteral("temperature=") + entry;
  if (mask_first_key) specs << QStringLiteral("mask-first-key");
  if (zero_massive) specs << QStringLiteral("massive=zero");
  if (!massive_means.trimmed().isEmpty()) specs << QStringLiteral("massive=mean:") + massive_means.trimmed();
  if (no_sinks) specs << QStringLiteral("no-sinks");
  return specs;
}

InterventionsPanel::InterventionsPanel(Session& session) : Panel(session) {
  widget_ = new QWidget;
  auto* layout = new QVBoxLayout(widget_);
  p_rope_ = new QDoubleSpinBox;
  p_rope_->setRange(0.0, 1.0);
  p_rope_->setSingleStep(0.05);
  p_rope_->setDecimals(2);
  p_rope_->setToolTip(tr("p-RoPE (Barbero et al. 2024, arXiv 2410.06205): the lowest-frequency fraction p of "
                         "every RoPE component left unrotated. 0: unchanged; 1: no rotation at all"));
  p_rope_->setObjectName(QStringLiteral("interventionsPRope"));
  temperatures_ = new QLineEdit;
  temperatures_->setObjectName(QStringLiteral("interventionsTemperatures"));
  temperatures_->setPlaceholderText(tr("e.g. L3H1:2, L5:0.5"));
  temperatures_->setToolTip(tr("Head temperatures (Wang et al. 2024, arXiv 2404.12224): layer x, head y's "
                               "logits divided by τ (LxHy:τ), or every head of layer x (Lx:τ)"));
  mask_first_key_ = new QCheckBox(tr("Mask the first token as a key"));
  mask_first_key_->setObjectName(QStringLiteral("interventionsMaskFirstKey"));
  mask_first_key_->setToolTip(tr("Key 0 hidden from every later query in every layer (Barbero et al. 2025, "
                                 "arXiv 2504.02732): the attention sink taken away"));
  zero_massive_ = new QCheckBox(tr("Zero the massive activations"));
  zero_massive_->setObjectName(QStringLiteral("interventionsZeroMassive"));
  zero_massive_->setToolTip(tr("Sun et al. 2024 (arXiv 2402.17762): the residual entries with |h| > 100 and "
                               "> 1000 × the median set to 0 at the first layer that has them"));
  massive_means_ = new QLineEdit;
  massive_means_->setObjectName(QStringLiteral("interventionsMassiveMeans"));
  massive_means_->setPlaceholderText(tr("or set them to the means of a massive-activations file"));
  massive_means_->setToolTip(tr("Sun et al. 2024 §3's other ablation: each massive entry set to its dimension's "
                                "mean, as `poslens-cli massive-activations … --out F.h5` measured it on a "
                                "calibration text"));
  browse_means_ = new QPushButton(tr("Browse…"));
  browse_means_->setObjectName(QStringLiteral("interventionsBrowseMeans"));
  connect(browse_means_, &QPushButton::clicked, this, [this] {
    const auto path = QFileDialog::getOpenFileName(widget_, tr("Massive-activation means"), QString(),
                                                   tr("HDF5 files (*.h5 *.hdf5)"));
    if (!path.isEmpty()) massive_means_->setText(path);
  });
  auto* means_row = new QHBoxLayout;
  means_row->addWidget(massive_means_, 1);
  means_row->addWidget(browse_means_);
  no_sinks_ = new QCheckBox(tr("Remove the learned sinks"));
  no_sinks_->setObjectName(QStringLiteral("interventionsNoSinks"));
  no_sinks_->setToolTip(tr("gpt-oss's learned sink logits dropped: each row's softmax over the keys alone"));
  auto* form = new QFormLayout;
  form->addRow(tr("p-RoPE p"), p_rope_);
  form->addRow(tr("Temperatures"), temperatures_);
  layout->addLayout(form);
  layout->addWidget(mask_first_key_);
  layout->addWidget(zero_massive_);
  layout->addLayout(means_row);
  layout->addWidget(no_sinks_);
  apply_ = new QPushButton(tr("Apply"));
  apply_->setObjectName(QStringLiteral("interventionsApply"));
  apply_->setToolTip(tr("Run the checkpoint with these interventions from now on (its weights are not changed)"));
  reset_ = new QPushButton(tr("Reset"));
  reset_->setObjectName(QStringLiteral("interventionsReset"));
  reset_->setToolTip(tr("Run the checkpoint as stored"));
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(apply_);
  buttons->addWidget(reset_);
  layout->addLayout(buttons);
  status_ = new QLabel(tr("No checkpoint open."));
  status_->setObjectName(QStringLiteral("interventionsStatus"));
  status_->setWordWrap(true);
  layout->addWidget(status_);
  layout->addStretch(1);
  widget_->setEnabled(false);

  connect(apply_, &QPushButton::clicked, this, &InterventionsPanel::apply);
  connect(reset_, &QPushButton::clicked, this, [this] { this->session().setInterventions({}); });
  connect(&session, &Session::modelOpened, this, &InterventionsPanel::onModelOpened);
}

void InterventionsPanel::apply() {
  session().setInterventions(intervention_specs(p_rope_->value(), temperatures_->text(), mask_first_key_->isChecked(),
                                                zero_massive_->isChecked(), no_sinks_->isChecked(),
                                                massive_means_->text()));
}

void InterventionsPanel::showSpecs(const QStringList& specs) {
  double p = 0.0;
  QStringList temperatures;
  QString means;
  for (const auto& spec : specs) {
    if (spec.startsWith(QStringLiteral("p-rope="))) p = spec.section('=', 1).toDouble();
    if (spec.startsWith(QStringLiteral("temperature="))) temperatures << spec.section('=', 1);
    if (spec.startsWith(QStringLiteral("massive=mean:"))) means = spec.mid(QStringLiteral("massive=mean:").size());
  }
  massive_means_->setText(means);
  p_rope_->setValue(p);
  temperatures_->setText(temperatures.join(QStringLiteral(", ")));
  mask_first_key_->setChecked(specs.contains(QStringLiteral("mask-first-key")));
  zero_massive_->setChecked(specs.contains(QStringLiteral("massive=zero")));
  no_sinks_->setChecked(specs.contains(QStringLiteral("no-sinks")));
}

void InterventionsPanel::onModelOpened(const ModelSummary& model) {
  showSpecs(session().interventions());  // what runs now, however it was applied
  widget_->setEnabled(true);
  p_rope_->setEnabled(model.rope);
  no_sinks_->setEnabled(model.learned_sinks || no_sinks_->isChecked());
  mask_first_key_->setEnabled(!model.encoder_decoder);
  zero_massive_->setEnabled(!model.encoder_decoder);
  massive_means_->setEnabled(!model.encoder_decoder);
  browse_means_->setEnabled(!model.encoder_decoder);
  status_->setText(model.interventions.isEmpty()
                       ? tr("Running the checkpoint as stored.")
                       : tr("Running with: %1.\nThe checkpoint's weights are unchanged; Reset restores it.")
                             .arg(model.interventions));
}

}  // namespace poslens::gui
