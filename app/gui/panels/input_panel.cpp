#include "app/gui/panels/input_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalBlocker>
#include <QVBoxLayout>

#include "app/gui/session.h"

namespace poslens::gui {
namespace {

/// The export choices: label and capture spec (empty spec: the custom line edit's text).
struct ExportChoice {
  const char* label;
  const char* spec;
};
const ExportChoice kExportChoices[] = {
    {"Attention patterns + logits", Session::kDefaultExportCaptures},
    {"Every attention hook", "blocks.*.attn.*,logits"},
    {"Everything (all hooks; large)", "*"},
    {"Custom…", ""},
};

}  // namespace

InputPanel::InputPanel(Session& session) : Panel(session) {
  widget_ = new QWidget;
  auto* layout = new QVBoxLayout(widget_);
  text_ = new QPlainTextEdit(tr("Once upon a time, there was a little girl named Lily."));
  text_->setPlaceholderText(tr("Text to run the model on"));
  text_->setMaximumHeight(110);
  token_ids_ = new QCheckBox(tr("Input is token ids"));
  token_ids_->setToolTip(tr("Ids separated by commas, spaces or lines"));
  open_text_ = new QPushButton(tr("Open text file…"));
  open_text_->setToolTip(tr("Read the input from a UTF-8 file (long inputs: thousands of tokens)"));
  decoder_text_ = new QLineEdit;
  decoder_text_->setPlaceholderText(tr("Decoder text (after the start token; empty: start token alone)"));
  decoder_text_->setToolTip(tr("Encoder–decoder models (T5): the text above is the encoder's input, "
                               "this the decoder's"));
  decoder_text_->setVisible(false);
  device_ = new QComboBox;
  device_->addItems({"auto", "cpu", "cuda"});
  device_->setToolTip(tr("Applied when a checkpoint is opened"));
  dtype_ = new QComboBox;
  dtype_->addItems({"float32", "bfloat16", "float16"});
  dtype_->setToolTip(tr("Applied when a checkpoint is opened"));
  auto* form = new QFormLayout;
  form->addRow(tr("Device"), device_);
  form->addRow(tr("Dtype"), dtype_);
  buildExportChoice();
  form->addRow(tr("HDF5 export"), export_choice_);
  form->addRow(QString(), export_custom_);
  run_ = new QPushButton(tr("Run"));
  run_->setShortcut(QKeySequence("Ctrl+Return"));
  cancel_ = new QPushButton(tr("Cancel"));
  progress_ = new QProgressBar;
  progress_->setTextVisible(true);
  message_ = new QLabel;
  message_->setWordWrap(true);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(run_);
  buttons->addWidget(cancel_);
  auto* text_row = new QHBoxLayout;
  text_row->addWidget(token_ids_);
  text_row->addStretch();
  text_row->addWidget(open_text_);
  layout->addWidget(text_);
  layout->addLayout(text_row);
  layout->addWidget(decoder_text_);
  layout->addLayout(form);
  layout->addLayout(buttons);
  layout->addWidget(progress_);
  layout->addWidget(message_);
  layout->addStretch();

  // Widgets -> session.
  connect(text_, &QPlainTextEdit::textChanged, this, &InputPanel::pushInput);
  connect(token_ids_, &QCheckBox::toggled, this, &InputPanel::pushInput);
  connect(decoder_text_, &QLineEdit::textChanged, this, &InputPanel::pushInput);
  auto pushLoadOptions = [this] {
    this->session().setLoadOptions(device_->currentText(), dtype_->currentText());
  };
  connect(device_, &QComboBox::currentIndexChanged, this, pushLoadOptions);
  connect(dtype_, &QComboBox::currentIndexChanged, this, pushLoadOptions);
  connect(run_, &QPushButton::clicked, &session, &Session::run);
  connect(open_text_, &QPushButton::clicked, this, [this] {
    const auto path = QFileDialog::getOpenFileName(widget_, tr("Open input text"), {},
                                                   tr("Text (*.txt *.md *.csv);;All files (*)"));
    if (!path.isEmpty()) this->session().openInputText(path);
  });
  connect(cancel_, &QPushButton::clicked, &session, &Session::cancel);
  pushInput();
  pushLoadOptions();

  // Session -> widgets.
  connect(&session, &Session::inputChanged, this, [this](const RunInput& input) {
    const QSignalBlocker quiet_text(text_), quiet_ids(token_ids_), quiet_decoder(decoder_text_);  // no echo back
    if (text_->toPlainText() != input.text) text_->setPlainText(input.text);
    token_ids_->setChecked(input.as_token_ids);
    if (decoder_text_->text() != input.decoder_text) decoder_text_->setText(input.decoder_text);
  });
  connect(&session, &Session::modelOpened, this, [this](const ModelSummary& model) {
    token_ids_->setChecked(!model.has_tokenizer);
    decoder_text_->setVisible(model.encoder_decoder);
    message_->setText(model.has_tokenizer
                          ? QString()
                          : tr("No tokenizer: enter token ids. %1").arg(model.tokenizer_note));
    onBusyChanged(this->session().isBusy());
  });
  connect(&session, &Session::busyChanged, this, [this](bool busy) { onBusyChanged(busy); });
  connect(&session, &Session::progress, this, [this](int done, int total) {
    progress_->setRange(0, total);  // total 0: Qt's busy indicator
    progress_->setValue(done);
  });
  connect(&session, &Session::runFinished, this,
          [this](const RunSummary& run) { message_->setText(run.message); });
  connect(&session, &Session::cancelled, this, [this](const QString& tag) {
    if (tag == "run") message_->setText(tr("Run cancelled."));
    if (tag == "open") message_->setText(tr("Loading cancelled; the previous model stays."));
  });
  onBusyChanged(false);
}

void InputPanel::buildExportChoice() {
  export_choice_ = new QComboBox;
  export_choice_->setToolTip(
      tr("Which hooks File ▸ Export captures writes. The export re-runs the input with these "
         "captures; a plain run captures only what the Heads panel shows."));
  for (const auto& choice : kExportChoices)
    export_choice_->addItem(tr(choice.label), QString::fromLatin1(choice.spec));
  export_custom_ = new QLineEdit;
  export_custom_->setPlaceholderText(tr("hook names or globs, comma-separated"));
  export_custom_->setToolTip(tr("e.g. blocks.*.attn.hook_pattern,blocks.3.*"));
  export_custom_->setVisible(false);
  auto pushExport = [this] {
    const QString spec = export_choice_->currentData().toString();
    const bool custom = spec.isEmpty();
    export_custom_->setVisible(custom);
    session().setExportCaptures(custom ? export_custom_->text() : spec);
  };
  connect(export_choice_, &QComboBox::currentIndexChanged, this, pushExport);
  connect(export_custom_, &QLineEdit::textChanged, this, pushExport);
  pushExport();
}

void InputPanel::pushInput() {
  session().setInput({text_->toPlainText(), token_ids_->isChecked(), decoder_text_->text()});
}

void InputPanel::onBusyChanged(bool busy) {
  run_->setEnabled(session().hasModel());  // a new Run replaces a running one
  cancel_->setEnabled(busy);
  progress_->setVisible(busy);
  if (busy) progress_->setRange(0, 0);  // indeterminate until the first layer reports
}

}  // namespace poslens::gui
