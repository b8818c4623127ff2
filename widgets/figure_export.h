#pragma once
// Figure export shared by every plot panel: PNG, PDF and SVG of a QCustomPlot, always written
// to a temporary file beside the target and renamed over it, so a failed or interrupted export
// never leaves a half-written figure (or destroys the previous one). QCustomPlot stays
// forward-declared: panels that do not draw with it can still use writeAtomically().
#include <QString>

#include <functional>
#include <vector>

class QCustomPlot;
class QWidget;

namespace poslens {

enum class FigureFormat { Png, Pdf, Svg };

/// The format named by `path`'s suffix (".png", ".pdf", ".svg", case-insensitive); PNG for any
/// other suffix.
FigureFormat figureFormatForPath(const QString& path);

/// Lower-case suffix of `format` without the dot ("png", "pdf", "svg").
QString figureSuffix(FigureFormat format);

/// Calls `write(tmp)` with a temporary path in `path`'s folder and renames the result over
/// `path`. Returns false and sets `*error` (if non-null) to a message naming `path` when the
/// folder is missing, `write` fails, the file is empty or the rename fails; the temporary is
/// removed then. `kind` names the format in messages ("PNG").
bool writeAtomically(const QString& path, const QString& kind,
                     const std::function<bool(const QString& tmp)>& write, QString* error);

/// Writes `plot` as `format` at `width` x `height` (pixels for PNG, points for PDF and SVG;
/// 0 = the plot's current size, or 800 x 700 when it has not been laid out yet). `title` goes
/// into the PDF/SVG metadata. Same failure contract as writeAtomically().
bool exportPlot(QCustomPlot& plot, const QString& path, FigureFormat format, int width,
                int height, const QString& title, QString* error);

/// Writes `plots` side by side (left to right, each `width` x `height`, 0 = the first plot's
/// current size) as one figure in `format`: vector in PDF and SVG, as exportPlot(). Used for
/// linked views (pattern | position-only map). `fractions`, one per plot when given, narrows
/// plot i to fractions[i] × width (a column beside a map). Same failure contract as
/// writeAtomically().
bool exportPlotsSideBySide(const std::vector<QCustomPlot*>& plots, const QString& path,
                           FigureFormat format, int width, int height, const QString& title,
                           QString* error, const std::vector<double>& fractions = {});

/// Writes a widget that paints itself (the head grid) as `format` at its current size, through
/// QWidget::render (PDF and SVG keep its drawing commands). Same failure contract.
bool exportWidget(QWidget& widget, const QString& path, FigureFormat format, const QString& title,
                  QString* error);

/// One CSV field (RFC 4180): quoted, with quotes doubled, when it holds a comma, quote or line
/// break; as is otherwise.
QString csvField(const QString& text);

/// Writes `text` (UTF-8) to `path` atomically; `kind` names the format in messages ("CSV").
bool writeTextAtomically(const QString& path, const QString& kind, const QString& text,
                         QString* error);

}  // namespace poslens
