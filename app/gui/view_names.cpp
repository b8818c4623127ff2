#include "app/gui/view_names.h"

#include <QObject>

namespace poslens::gui {

QString viewLabel(const QString& suffix) {
  if (suffix == "hook_pattern") return QObject::tr("Attention pattern");
  if (suffix == "hook_attn_scores") return QObject::tr("Attention logits (pre-softmax)");
  if (suffix == "hook_pos_scores") return QObject::tr("Position scores (position-only logit term)");
  if (suffix == "hook_cope_gates") return QObject::tr("CoPE gates");
  if (suffix == "hook_cope_pos") return QObject::tr("CoPE contextual positions");
  return suffix;
}

}  // namespace poslens::gui
