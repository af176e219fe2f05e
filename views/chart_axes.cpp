#include "views/chart_axes.h"

#include <QAbstractBarSeries>
#include <QBarCategoryAxis>
#include <QChart>
#include <QFontMetrics>
#include <QFontMetricsF>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

namespace moex::views {

QFont scaledFont(QFont f, double factor)
{
    if (f.pointSizeF() > 0)
        f.setPointSizeF(f.pointSizeF() * factor);
    else if (f.pixelSize() > 0)
        f.setPixelSize(std::max(1, static_cast<int>(std::lround(f.pixelSize() * factor))));
    return f;
}

QString longestThatFits(const QStringList& options, const QFont& font, double room)
{
    const QFontMetricsF fm(font);
    for (const QString& o : options)
        if (room <= 0 || fm.horizontalAdvance(o) <= room)
            return o;
    return options.back();
}

void labelAxis(QValueAxis* axis, double lo, double hi, int bars, int maxLabels)
{
    axis->setRange(lo, hi);
    axis->setTickType(QValueAxis::TicksDynamic);
    const double span = hi - lo;
    double step = span / std::max(1, maxLabels);
    const double mag = std::pow(10.0, std::floor(std::log10(std::max(step, 1e-12))));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (m * mag >= step) {
            step = m * mag;
            break;
        }
    if (bars > 0 && span / bars == 1.0)
        step = std::max(1.0, step);  // GPU indices: whole numbers
    axis->setTickAnchor(0.0);  // ticks on round numbers
    axis->setTickInterval(step);
    axis->setLabelFormat(step >= 1 ? QStringLiteral("%.0f") : QStringLiteral("%.2g"));
    axis->setMinorTickCount(0);
}

int labelsThatFit(const QValueAxis* axis, const QString& widest, int chartWidth, int cap)
{
    const QFontMetrics fm(axis->labelsFont());
    const int room = std::max(60, chartWidth - 90);  // the value axis and margins
    const int each = fm.horizontalAdvance(widest) + fm.horizontalAdvance(QStringLiteral("00"));
    return std::clamp(room / std::max(1, each), 2, cap);
}

void setNiceRange(QValueAxis* axis, double lo, double hi)
{
    axis->setTickCount(5);
    axis->setRange(lo, hi);
    axis->applyNiceNumbers();
}

double timeUnitFor(double hiUs, double current)
{
    constexpr double kToMs = 10000.0;
    constexpr double kToUs = 8000.0;
    return hiUs >= kToMs ? 1000.0 : hiUs < kToUs ? 1.0 : current;
}

void addBarAxes(QChart* chart, QAbstractBarSeries* series, QBarCategoryAxis* x, QValueAxis* xLabels,
                       QValueAxis* y, const QString& xTitle, const QString& yTitle, const QString& yFormat)
{
    chart->addSeries(series);
    x->setVisible(false);
    xLabels->setTitleText(xTitle);
    xLabels->setGridLineVisible(false);
    y->setTitleText(yTitle);
    y->setLabelFormat(yFormat);
    chart->addAxis(xLabels, Qt::AlignBottom);
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    series->attachAxis(x);
    series->attachAxis(y);
}

}  // namespace moex::views
