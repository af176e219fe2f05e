// Helpers the bar charts share (views/charts.cpp, views/breakdown_chart.cpp); not part of the views'
// interface.
#pragma once

#include <QFont>
#include <QString>
#include <QStringList>

class QAbstractBarSeries;
class QBarCategoryAxis;
class QChart;
class QValueAxis;

namespace moex::views {

// `f` with its point (or pixel) size times `factor`.
QFont scaledFont(QFont f, double factor);

// The first of `options` (longest first) whose text fits `room` pixels in `font`, else the last.
QString longestThatFits(const QStringList& options, const QFont& font, double room);

// Bars sit on a hidden category axis (one category per bar); a value axis over the same span
// carries the labels, so that 72 GPUs or 20 load bins get a few readable ticks instead of
// elided category names. labelAxis sets that axis's range and round-number ticks.
void labelAxis(QValueAxis* axis, double lo, double hi, int bars, int maxLabels);

// As many labels as fit side by side in a chart `chartWidth` wide (labels as wide as `widest`),
// at most `cap`, at least 2: a narrow chart or a larger presentation font gets fewer, never
// labels cut to "...".
int labelsThatFit(const QValueAxis* axis, const QString& widest, int chartWidth, int cap);

// The axis over [lo, hi] rounded out to nice numbers, from five ticks each time: Qt's
// applyNiceNumbers keeps the tick count it settles on, so that calling it step after step on the
// same values creeps (0-563 went to 0-600 with 4 ticks, then 0-1000 with 3).
void setNiceRange(QValueAxis* axis, double lo, double hi);

// The unit (in µs) for times whose largest is hiUs: 1000 (ms) from 10 ms, 1 (µs) below 8 ms, and
// `current` between, so that a step hovering at the edge does not switch the unit every step. A
// rack's decode step is tens of ms and the CPU engine's hundreds ("400000 µs per step" had
// six-digit labels). The breakdown chart's axis and the canvas's busy-time legend both follow it.
double timeUnitFor(double hiUs, double current);

// The series on a hidden category axis, labelled by a value axis over the same span (labelAxis),
// with a value axis for the heights.
void addBarAxes(QChart* chart, QAbstractBarSeries* series, QBarCategoryAxis* x, QValueAxis* xLabels, QValueAxis* y,
                const QString& xTitle, const QString& yTitle, const QString& yFormat);

}  // namespace moex::views
