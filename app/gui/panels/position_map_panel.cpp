#include "app/gui/panels/position_map_panel.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QSignalBlocker>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSplitter>
#include <QVBoxLayout>

#include "app/gui/session.h"
#include "widgets/heatmap_view.h"

namespace poslens::gui {

PositionMapPanel::PositionMapPanel(Session& session) : Panel(session) {
  widget_ = new QWidget;
  auto* layout = new QVBoxLayout(widget_);
  auto* top = new QHBoxLayout;
  compute_ = new QPushButton(tr("Compute for the selected head"));
  compute_->setToolTip(tr("Pattern and position-only map of the head selected in the Heads "
                          "panel, on the input text"));
  info_ = new QLabel(tr("Position-only attention: what each head would attend to from position "
                        "alone, beside its real pattern."));
  info_->setWordWrap(true);
  right_ = new QComboBox;
  right_->addItems({tr("position only"), tr("token–token term"), tr("token–position term"),
                    tr("position–token term"), tr("position–position term"), tr("bias terms")});
  right_->setToolTip(tr("Absolute positions, layer 0: the logits split into four terms (and "
                        "the biases) that sum to them (Ke et al. 2020)"));
  right_->setVisible(false);
  top->addWidget(compute_);
  top->addWidget(right_);
  top->addWidget(info_, 1);
  layout->addLayout(top);
  auto* split = new QSplitter(Qt::Horizontal);
  pattern_ = new HeatmapView;
  position_ = new HeatmapView;
  counted_ = new QListWidget;
  counted_->setToolTip(tr("CoPE: the tokens this head counts (mean gate over the queries that "
                          "see them, and how often they occur)"));
  counted_->setVisible(false);
  split->addWidget(pattern_);
  split->addWidget(position_);
  split->addWidget(counted_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 3);
  split->setStretchFactor(2, 1);
  layout->addWidget(split, 1);

  // Linked zoom, pan and hover.
  for (auto [from, to] : {std::pair{pattern_, position_}, std::pair{position_, pattern_}}) {
    connect(from, &HeatmapView::viewChanged, to, &HeatmapView::setViewRange);
    connect(from, &HeatmapView::hovered, to,
            [to = to](int query, int key, double) { to->showHover(query, key); });
  }
  connect(compute_, &QPushButton::clicked, this, &PositionMapPanel::compute);
  connect(right_, &QComboBox::currentIndexChanged, this, &PositionMapPanel::showRight);
  connect(&session, &Session::headSelected, this, [this](int layer, int head) {
    if (following_ && layer >= 0 && head >= 0) this->session().showPositions(layer, head);
  });
  connect(&session, &Session::inputChanged, this, [this] { following_ = false; });
  connect(&session, &Session::modelOpened, this, [this] {
    following_ = false;
    pattern_->clear();
    position_->clear();
    counted_->clear();
    counted_->setVisible(false);
    emit figureChanged();
  });
  connect(&session, &Session::positionsReady, this, [this](const PositionView& view) {
    following_ = true;
    shown_ = view;
    pattern_->setHeatmap(view.pattern);
    right_->setVisible(!view.absolute_terms.empty());
    showRight(view.absolute_terms.empty() ? 0 : right_->currentIndex());
    info_->setText(tr("Layer %1, head %2 · method: %3 · %4")
                       .arg(view.layer)
                       .arg(view.head)
                       .arg(view.method, view.explanation));
    counted_->clear();
    counted_->addItems(view.counted);
    counted_->setVisible(!view.counted.isEmpty());
    emit figureChanged();
  });
}

void PositionMapPanel::showRight(int index) {
  if (right_->currentIndex() != index) {
    const QSignalBlocker quiet(right_);
    right_->setCurrentIndex(index);
  }
  const bool term = index > 0 && index <= static_cast<int>(shown_.absolute_terms.size());
  position_->setHeatmap(term ? shown_.absolute_terms[static_cast<size_t>(index - 1)]
                             : shown_.position);
  emit figureChanged();
}

void PositionMapPanel::compute() {
  auto [layer, head] = session().selectedHead();
  session().showPositions(std::max(layer, 0), std::max(head, 0));
}

bool PositionMapPanel::hasFigure() const { return position_->hasHeatmap(); }

bool PositionMapPanel::exportFigure(const QString& path, FigureFormat format, QString* error) {
  return position_->exportFigure(path, format, error);
}

}  // namespace poslens::gui
