// The load-statistics report's charts: per-layer imbalance bars and strategy curves.
#include "views/report_charts.h"

#include "views/charts.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QLegend>
#include <QLineSeries>
#include <QPen>
#include <QScatterSeries>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <limits>

namespace moex::views {

namespace {

// The window's chart view, on white and without a frame: these charts are also drawn into pages.
QChartView* makeReportView(QWidget* parent, QChart* chart)
{
    QChartView* view = embedChart(parent, chart);
    view->setFrameShape(QFrame::NoFrame);
    view->setBackgroundBrush(Qt::white);
    return view;
}

// A round upper bound for an axis: 1, 2 or 5 times a power of ten at or above `v`.
double niceCeil(double v)
{
    if (!(v > 0))
        return 1;
    const double p = std::pow(10.0, std::floor(std::log10(v)));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (m * p >= v)
            return m * p;
    return 10 * p;
}

// The value axis from 0 to `hi` rounded up, ticks at round steps (1, 2 or 5 times a power of ten,
// four to six of them) and labels with the decimals those steps need: QValueAxis's own five ticks
// over 0-50 read "12.5, 25.0, 37.5" and users "250.0".
void roundValueAxis(QValueAxis* axis, double hi)
{
    const double step = niceCeil(std::max(hi, 1e-9) / 5);
    const double top = std::max(step, std::ceil(hi / step - 1e-9) * step);
    axis->setRange(0, top);
    axis->setTickType(QValueAxis::TicksFixed);
    axis->setTickCount(static_cast<int>(std::lround(top / step)) + 1);
    const int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
    axis->setLabelFormat(QStringLiteral("%.") + QString::number(decimals) + QStringLiteral("f"));
}

// Distinct colours for up to six strategies (the canvas palette's blues, oranges and greens).
QColor lineColour(int i)
{
    static const QColor colours[] = {QColor(0x3b, 0x52, 0x8b), QColor(0xd9, 0x6c, 0x1e), QColor(0x2e, 0x8b, 0x57),
                                     QColor(0x8e, 0x44, 0xad), QColor(0xb0, 0x3a, 0x2e), QColor(0x16, 0x8a, 0x9a)};
    return colours[static_cast<std::size_t>(i) % std::size(colours)];
}

}  // namespace

// --- LayerImbalanceChart -------------------------------------------------------------------------

struct LayerImbalanceChart::Impl {
    QChart* chart = new QChart;
    QBarSeries* bars = new QBarSeries;
    QBarSet* set = new QBarSet(QString());
    QLineSeries* p90 = new QLineSeries;
    QBarCategoryAxis* x = new QBarCategoryAxis;
    QValueAxis* y = new QValueAxis;
};

LayerImbalanceChart::LayerImbalanceChart(QWidget* parent) : QWidget(parent), d(std::make_unique<Impl>())
{
    d->chart->setTitle(tr("Imbalance per MoE layer with EPLB off (contiguous experts)"));
    d->set->setLabel(tr("max / mean GPU load"));
    d->set->setColor(QColor(0x3b, 0x52, 0x8b));
    d->set->setBorderColor(QColor(0x3b, 0x52, 0x8b));
    d->bars->append(d->set);
    d->bars->setBarWidth(0.8);
    d->p90->setName(tr("90th percentile over layers"));
    QPen pen(QColor(0xd9, 0x6c, 0x1e));
    pen.setWidthF(2);
    pen.setStyle(Qt::DashLine);
    d->p90->setPen(pen);
    d->chart->addSeries(d->bars);
    d->chart->addSeries(d->p90);
    d->x->setTitleText(tr("decoder layer"));
    d->y->setTitleText(tr("max / mean GPU load"));
    d->y->setLabelFormat(QStringLiteral("%.2f"));
    d->chart->addAxis(d->x, Qt::AlignBottom);
    d->chart->addAxis(d->y, Qt::AlignLeft);
    for (QAbstractSeries* s : {static_cast<QAbstractSeries*>(d->bars), static_cast<QAbstractSeries*>(d->p90)}) {
        s->attachAxis(d->x);
        s->attachAxis(d->y);
    }
    makeReportView(this, d->chart);
}

LayerImbalanceChart::~LayerImbalanceChart() = default;

void LayerImbalanceChart::setData(const std::vector<int>& layerIds, const std::vector<double>& imbalance, double p90)
{
    QStringList categories;
    QList<qreal> values;
    double top = 1.0;
    for (std::size_t i = 0; i < imbalance.size(); ++i) {
        categories << QString::number(i < layerIds.size() ? layerIds[i] : static_cast<int>(i));
        values << imbalance[i];
        top = std::max(top, imbalance[i]);
    }
    d->set->remove(0, d->set->count());
    d->set->append(values);
    d->x->clear();
    d->x->append(categories);
    const qreal last = std::max<qreal>(0, static_cast<qreal>(values.size()) - 1);
    d->p90->replace(QList<QPointF>{{-0.5, p90}, {last + 0.5, p90}});
    d->y->setRange(0, niceCeil(top * 1.05));
    // Many layers: smaller labels so that every layer keeps its number.
    QFont f = d->x->labelsFont();
    if (values.size() > 40)
        f.setPointSizeF(std::max(5.0, f.pointSizeF() * 0.7));
    d->x->setLabelsFont(f);
}

int LayerImbalanceChart::barCount() const { return static_cast<int>(d->set->count()); }

QChart* LayerImbalanceChart::chart() const { return d->chart; }

// --- SlotCurveChart --------------------------------------------------------------------------------

struct SlotCurveChart::Impl {
    QChart* chart = new QChart;
    QValueAxis* x = new QValueAxis;
    QValueAxis* y = new QValueAxis;
    std::vector<QAbstractSeries*> series;
    std::vector<std::vector<int>> indices;  // per line series, the report index of each point
    int points = 0;
};

SlotCurveChart::SlotCurveChart(QWidget* parent) : QWidget(parent), d(std::make_unique<Impl>())
{
    d->x->setTitleText(tr("slots per GPU"));
    d->x->setLabelFormat(QStringLiteral("%d"));
    d->chart->addAxis(d->x, Qt::AlignBottom);
    d->chart->addAxis(d->y, Qt::AlignLeft);
    d->chart->legend()->setMarkerShape(QLegend::MarkerShapeFromSeries);  // each line's dash in the legend
    makeReportView(this, d->chart);
}

SlotCurveChart::~SlotCurveChart() = default;

void SlotCurveChart::setData(const QString& title, const QString& yTitle, const std::vector<CurveLine>& lines,
                             double baseline, int marked)
{
    for (QAbstractSeries* s : d->series) {
        d->chart->removeSeries(s);
        delete s;
    }
    d->series.clear();
    d->indices.clear();
    d->points = 0;
    d->chart->setTitle(title);
    d->y->setTitleText(yTitle);
    double xmin = std::numeric_limits<double>::max(), xmax = 0, ymax = baseline;
    QPointF markedAt;
    bool haveMark = false;
    for (std::size_t li = 0; li < lines.size(); ++li) {
        const CurveLine& line = lines[li];
        auto* s = new QLineSeries;
        s->setName(line.name);
        // Strategies often give the same curve (eplb, search and gem on a small model): each line
        // thinner than the one before and dashed its own way, so that one drawn over another
        // still shows both.
        QPen pen(lineColour(static_cast<int>(li)));
        static constexpr Qt::PenStyle kStyles[] = {Qt::SolidLine, Qt::DashLine, Qt::DotLine, Qt::DashDotLine};
        pen.setWidthF(std::max(1.5, 4.5 - 1.2 * static_cast<double>(li)));
        pen.setStyle(kStyles[li % std::size(kStyles)]);
        s->setPen(pen);
        s->setPointsVisible(true);
        for (std::size_t k = 0; k < line.x.size() && k < line.y.size(); ++k) {
            s->append(line.x[k], line.y[k]);
            xmin = std::min(xmin, line.x[k]);
            xmax = std::max(xmax, line.x[k]);
            ymax = std::max(ymax, line.y[k]);
            if (k < line.point.size() && line.point[k] == marked && marked >= 0) {
                markedAt = QPointF(line.x[k], line.y[k]);
                haveMark = true;
            }
        }
        d->points += static_cast<int>(s->count());
        d->chart->addSeries(s);
        s->attachAxis(d->x);
        s->attachAxis(d->y);
        const int seriesIndex = static_cast<int>(d->indices.size());
        d->indices.push_back(line.point);
        connect(s, &QLineSeries::clicked, this, [this, s, seriesIndex](const QPointF& at) {
            // The nearest point of the clicked line.
            int best = -1;
            double bestDist = std::numeric_limits<double>::max();
            for (int k = 0; k < s->count(); ++k) {
                const double dist = std::abs(s->at(k).x() - at.x());
                if (dist < bestDist) {
                    bestDist = dist;
                    best = k;
                }
            }
            const auto& idx = d->indices[static_cast<std::size_t>(seriesIndex)];
            if (best >= 0 && best < static_cast<int>(idx.size()))
                emit pointClicked(idx[static_cast<std::size_t>(best)]);
        });
        d->series.push_back(s);
    }
    if (xmin > xmax) {
        xmin = 0;
        xmax = 1;
    }
    auto* base = new QLineSeries;
    base->setName(tr("EPLB off"));
    QPen dashed(QColor(0x70, 0x70, 0x70));
    dashed.setWidthF(1.5);
    dashed.setStyle(Qt::DashLine);
    base->setPen(dashed);
    base->append(xmin, baseline);
    base->append(xmax, baseline);
    d->chart->addSeries(base);
    base->attachAxis(d->x);
    base->attachAxis(d->y);
    d->series.push_back(base);
    if (haveMark) {
        auto* mark = new QScatterSeries;
        mark->setName(tr("recommended"));
        mark->setMarkerSize(14);
        mark->setColor(QColor(0xc0, 0x39, 0x2b));
        mark->append(markedAt);
        d->chart->addSeries(mark);
        mark->attachAxis(d->x);
        mark->attachAxis(d->y);
        d->series.push_back(mark);
    }
    d->x->setRange(std::max(0.0, xmin - 0.5), xmax + 0.5);
    d->x->setTickType(QValueAxis::TicksDynamic);
    d->x->setTickAnchor(0);
    d->x->setTickInterval(std::max(1.0, std::ceil((xmax - xmin + 1) / 8)));
    roundValueAxis(d->y, ymax * 1.05);
}

int SlotCurveChart::pointCount() const { return d->points; }

QChart* SlotCurveChart::chart() const { return d->chart; }

}  // namespace moex::views
