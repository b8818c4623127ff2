#pragma once
// Human names of the per-head views (ModelSummary::views hook suffixes).
#include <QString>

namespace poslens::gui {

/// "Attention pattern" for "hook_pattern", ...; the suffix itself for an unknown view.
QString viewLabel(const QString& suffix);

}  // namespace poslens::gui
