#include "widgets/figure_export.h"

#include <qcustomplot.h>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QPageSize>
#include <QPdfWriter>
#include <QWidget>
#include <QSvgGenerator>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/base/atomic_file.h"
#include "core/base/error.h"

namespace poslens {

FigureFormat figureFormatForPath(const QString& path) {
  const QString suffix = QFileInfo(path).suffix().toLower();
  if (suffix == QLatin1String("pdf")) return FigureFormat::Pdf;
  if (suffix == QLatin1String("svg")) return FigureFormat::Svg;
  return FigureFormat::Png;
}

QString figureSuffix(FigureFormat format) {
  switch (format) {
    case FigureFormat::Pdf: return QStringLiteral("pdf");
    case FigureFormat::Svg: return QStringLiteral("svg");
    case FigureFormat::Png: break;
  }
  return QStringLiteral("png");
}

bool writeAtomically(const QString& path, const QString& kind,
                     const std::function<bool(const QString& tmp)>& write, QString* error) {
  auto fail = [&](const QString& message) {
    if (error) *error = message;
    return false;
  };
  if (path.isEmpty()) return fail(QObject::tr("Cannot export %1: no file name given").arg(kind));
  try {
    AtomicOutput out(QFile::encodeName(path).toStdString());
    if (!write(QFile::decodeName(out.path().c_str())))
      return fail(QObject::tr("Could not write %1 '%2' (is the folder writable?)").arg(kind, path));
    out.commit();
  } catch (const Error& e) {
    return fail(QObject::tr("Cannot export %1: %2").arg(kind, QString::fromStdString(e.what())));
  }
  if (error) error->clear();
  return true;
}

namespace {

/// Runs `paint` on a painter for `format` into `tmp` (a `width` x `height` page or image).
bool paintTo(const QString& tmp, FigureFormat format, int width, int height, const QString& title,
             const std::function<void(QCPPainter&)>& paint) {
  QCPPainter painter;
  switch (format) {
    case FigureFormat::Svg: {
      QSvgGenerator generator;
      generator.setFileName(tmp);
      generator.setSize(QSize(width, height));
      generator.setViewBox(QRect(0, 0, width, height));
      generator.setTitle(title);
      generator.setDescription(QStringLiteral("PosLens"));
      if (!painter.begin(&generator)) return false;
      paint(painter);
      return painter.end();
    }
    case FigureFormat::Pdf: {
      QPdfWriter writer(tmp);
      writer.setCreator(QStringLiteral("PosLens"));
      writer.setTitle(title);
      writer.setPageSize(QPageSize(QSizeF(width, height), QPageSize::Point));
      writer.setPageMargins(QMarginsF(0, 0, 0, 0));
      writer.setResolution(72);  // one point per pixel of the layout
      if (!painter.begin(&writer)) return false;
      paint(painter);
      return painter.end();
    }
    case FigureFormat::Png:
      break;
  }
  QImage image(width, height, QImage::Format_ARGB32);
  image.fill(Qt::white);
  if (!painter.begin(&image)) return false;
  paint(painter);
  painter.end();
  return image.save(tmp, "PNG");
}

}  // namespace

bool exportPlot(QCustomPlot& plot, const QString& path, FigureFormat format, int width,
                int height, const QString& title, QString* error) {
  if (width <= 0 || height <= 0) {
    const bool laid_out = plot.width() >= 100 && plot.height() >= 100;
    width = laid_out ? plot.width() : 800;
    height = laid_out ? plot.height() : 700;
  }
  const QString kind = figureSuffix(format).toUpper();
  return writeAtomically(path, kind, [&](const QString& tmp) {
    switch (format) {
      case FigureFormat::Pdf:
        return plot.savePdf(tmp, width, height, QCP::epAllowCosmetic, QStringLiteral("PosLens"),
                            title);
      case FigureFormat::Svg:
        return paintTo(tmp, format, width, height, title,
                       [&](QCPPainter& painter) { plot.toPainter(&painter, width, height); });
      case FigureFormat::Png:
        break;
    }
    return plot.savePng(tmp, width, height);
  }, error);
}


bool exportPlotsSideBySide(const std::vector<QCustomPlot*>& plots, const QString& path,
                           FigureFormat format, int width, int height, const QString& title,
                           QString* error, const std::vector<double>& fractions) {
  const QString kind = figureSuffix(format).toUpper();
  if (plots.empty()) {
    if (error) *error = QObject::tr("Cannot export %1 '%2': nothing to draw").arg(kind, path);
    return false;
  }
  if (width <= 0 || height <= 0) {
    const bool laid_out = plots.front()->width() >= 100 && plots.front()->height() >= 100;
    width = laid_out ? plots.front()->width() : 800;
    height = laid_out ? plots.front()->height() : 700;
  }
  std::vector<int> widths;
  for (size_t i = 0; i < plots.size(); ++i)
    widths.push_back(i < fractions.size() ? std::max(1, static_cast<int>(std::lround(width * fractions[i]))) : width);
  const int total = std::accumulate(widths.begin(), widths.end(), 0);
  return writeAtomically(path, kind, [&](const QString& tmp) {
    return paintTo(tmp, format, total, height, title, [&](QCPPainter& painter) {
      for (size_t i = 0; i < plots.size(); ++i) {
        plots[i]->toPainter(&painter, widths[i], height);
        painter.translate(widths[i], 0);
      }
    });
  }, error);
}

bool exportWidget(QWidget& widget, const QString& path, FigureFormat format, const QString& title,
                  QString* error) {
  const int width = std::max(widget.width(), 100), height = std::max(widget.height(), 100);
  return writeAtomically(path, figureSuffix(format).toUpper(), [&](const QString& tmp) {
    return paintTo(tmp, format, width, height, title, [&](QCPPainter& painter) {
      widget.render(&painter, QPoint(), QRegion(), QWidget::DrawChildren);
    });
  }, error);
}

QString csvField(const QString& text) {
  if (!text.contains(QLatin1Char(',')) && !text.contains(QLatin1Char('"')) &&
      !text.contains(QLatin1Char('\n')) && !text.contains(QLatin1Char('\r')))
    return text;
  return QLatin1Char('"') + QString(text).replace(QLatin1String("\""), QLatin1String("\"\"")) +
         QLatin1Char('"');
}

bool writeTextAtomically(const QString& path, const QString& kind, const QString& text,
                         QString* error) {
  return writeAtomically(path, kind, [&](const QString& tmp) {
    QFile file(tmp);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate)) return false;
    const QByteArray bytes = text.toUtf8();
    return file.write(bytes) == bytes.size() && file.flush();
  }, error);
}

}  // namespace poslens
