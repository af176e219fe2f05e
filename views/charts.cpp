// Qt Charts views of StepMetrics: step time and tokens/s over steps, the expert-load histogram,
// and what every chart shares (the per-GPU breakdown: breakdown_chart.cpp).
#include "views/charts.h"

#include "views/chart_axes.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QFontMetricsF>
#include <QLineSeries>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <deque>

namespace moex::views {

QChartView* embedChart(QWidget* parent, QChart* chart)
{
    chart->setMargins(QMargins(4, 4, 4, 4));
    chart->setBackgroundRoundness(0);
    chart->legend()->setAlignment(Qt::AlignTop);
    QFont f = chart->titleFont();
    f.setBold(true);
    chart->setTitleFont(f);
    auto* view = new QChartView(chart, parent);
    view->setRenderHint(QPainter::Antialiasing);
    auto* layout = new QVBoxLayout(parent);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(view);
    return view;
}

void changeChartFonts(QChart* chart, const std::function<QFont(QFont)>& change)
{
    chart->setTitleFont(change(chart->titleFont()));
    chart->legend()->setFont(change(chart->legend()->font()));
    for (QAbstractAxis* a : chart->axes()) {
        a->setLabelsFont(change(a->labelsFont()));
        a->setTitleFont(change(a->titleFont()));
    }
}


void scaleChartFonts(QChart* chart, double factor)
{
    changeChartFonts(chart, [factor](QFont f) { return scaledFont(f, factor); });
}

// --- StepTimeChart ------------------------------------------------------------------------------

static double valueAxisWidth(const QValueAxis* axis, bool withTitle);

struct StepTimeChart::Impl {
    QChart* chart = new QChart;
    QLineSeries* time = new QLineSeries;
    QLineSeries* tps = new QLineSeries;
    QValueAxis* x = new QValueAxis;
    QValueAxis* yTime = new QValueAxis;
    QValueAxis* yTps = new QValueAxis;
    std::deque<QPointF> timePts, tpsPts;  // tpsPts in tokens/s; plotted in thousands where they reach 1,000
    int history = 200;

    void refresh()
    {
        time->replace(QList<QPointF>(timePts.begin(), timePts.end()));
        // Thousands where the history reaches 1,000 tokens/s (a simulated rack: "511.4"), tokens/s
        // below (the CPU engine's tens a second read "0.013 k tokens/s" otherwise).
        double most = 0;
        for (const QPointF& p : tpsPts)
            most = std::max(most, p.y());
        const double unit = most >= 1000 ? 1000 : 1;
        const QString name = unit > 1 ? StepTimeChart::tr("k tokens/s") : StepTimeChart::tr("tokens/s");
        QList<QPointF> shown;
        shown.reserve(static_cast<qsizetype>(tpsPts.size()));
        for (const QPointF& p : tpsPts)
            shown.append(QPointF(p.x(), p.y() / unit));
        tps->replace(shown);
        if (tps->name() != name) {
            tps->setName(name);
            yTps->setTitleText(name);
        }
        if (timePts.empty()) {
            x->setRange(0, 1);
            x->setTickType(QValueAxis::TicksDynamic);
            x->setTickAnchor(0);
            x->setTickInterval(1);
            return;
        }
        // Steps are integers: ticks one or more whole steps apart (never "0 0 0 0 1" at step 0).
        const double lo = timePts.front().x();
        const double hi = std::max(timePts.back().x(), lo + 1);
        x->setRange(lo, hi);
        x->setTickType(QValueAxis::TicksDynamic);
        x->setTickAnchor(lo);
        x->setTickInterval(std::max(1.0, std::ceil((hi - lo) / 5.0)));
        auto range = [](const auto& pts, QValueAxis* axis) {
            double low = pts.front().y();
            double high = low;
            for (const QPointF& p : pts) {
                low = std::min(low, p.y());
                high = std::max(high, p.y());
            }
            const double pad = std::max((high - low) * 0.1, std::abs(high) * 0.02 + 1e-9);
            setNiceRange(axis, std::max(0.0, low - pad), high + pad);
        };
        range(timePts, yTime);
        range(shown, yTps);
        fitValueAxes();
    }

    // Qt Charts gives the vertical axes at most 0.4 of the chart's width together (0.2 each with
    // two) and elides the labels of an axis that wants more ("1..."). Where an axis with its title
    // would not fit, the titles go (the legend above names each series with its unit, and each
    // axis is drawn in its series' colour); where even the labels would not, the throughput axis
    // goes and the step time's has the room of both (its line stays, as the legend's second entry).
    void fitValueAxes()
    {
        const QMarginsF margins = chart->margins();
        const double room = 0.4 * (chart->size().width() - margins.left() - margins.right());
        const auto fits = [&](bool titles) {
            return valueAxisWidth(yTime, titles) <= room / 2 && valueAxisWidth(yTps, titles) <= room / 2;
        };
        const bool both = room <= 0 || fits(false);
        const bool titles = room <= 0 || fits(true) || (!both && valueAxisWidth(yTime, true) <= room);
        yTps->setVisible(both);
        yTime->setTitleVisible(titles);
        yTps->setTitleVisible(titles);
    }
};

static double valueAxisWidth(const QValueAxis* axis, bool withTitle)
{
    // The widest tick label as "%.4g" writes it, its tick and padding, and the title's line.
    const QFontMetricsF labels(axis->labelsFont());
    double widest = 0;
    const int ticks = std::max(2, axis->tickCount());
    for (int i = 0; i < ticks; ++i) {
        const double v = axis->min() + (axis->max() - axis->min()) * i / (ticks - 1);
        widest = std::max(widest, labels.horizontalAdvance(QString::asprintf("%.4g", v)));
    }
    return widest + 16 + (withTitle ? QFontMetricsF(axis->titleFont()).height() + 4 : 0.0);
}

StepTimeChart::StepTimeChart(QWidget* parent) : QWidget(parent), d(std::make_unique<Impl>())
{
    d->chart->setTitle(tr("Step time and throughput"));
    d->time->setName(tr("step time (ms)"));
    d->tps->setName(tr("k tokens/s"));
    d->time->setPen(QPen(QColor(0x1f, 0x77, 0xb4), 2));
    d->tps->setPen(QPen(QColor(0xff, 0x7f, 0x0e), 2));
    d->chart->addSeries(d->time);
    d->chart->addSeries(d->tps);
    d->x->setTitleText(tr("step"));
    d->x->setLabelFormat(QStringLiteral("%d"));
    d->yTime->setTitleText(tr("ms"));
    d->yTime->setLabelFormat(QStringLiteral("%.4g"));  // "14.25", not "14.250000" cut to "1..."
    d->yTps->setTitleText(tr("k tokens/s"));
    d->yTps->setLabelFormat(QStringLiteral("%.4g"));
    d->chart->addAxis(d->x, Qt::AlignBottom);
    d->chart->addAxis(d->yTime, Qt::AlignLeft);
    d->chart->addAxis(d->yTps, Qt::AlignRight);
    d->time->attachAxis(d->x);
    d->time->attachAxis(d->yTime);
    d->tps->attachAxis(d->x);
    d->tps->attachAxis(d->yTps);
    d->yTime->setLinePenColor(d->time->pen().color());
    d->yTps->setLinePenColor(d->tps->pen().color());
    embedChart(this, d->chart);
    // A new size or font (presentation mode) lays the chart out again: the titles follow.
    connect(d->chart, &QChart::plotAreaChanged, this, [this] { d->fitValueAxes(); });
    d->refresh();
}

StepTimeChart::~StepTimeChart() = default;

bool StepTimeChart::valueAxisTitlesShown() const { return d->yTime->isTitleVisible(); }
bool StepTimeChart::throughputAxisShown() const { return d->yTps->isVisible(); }

void StepTimeChart::addStep(const StepMetrics& m)
{
    d->timePts.emplace_back(m.step, m.summary.step_time_us / 1000.0);
    d->tpsPts.emplace_back(m.step, m.summary.tokens_per_s);
    while (static_cast<int>(d->timePts.size()) > d->history) {
        d->timePts.pop_front();
        d->tpsPts.pop_front();
    }
    d->refresh();
}

void StepTimeChart::clear()
{
    d->timePts.clear();
    d->tpsPts.clear();
    d->refresh();
}

void StepTimeChart::setHistoryLength(int steps)
{
    d->history = std::max(1, steps);
    while (static_cast<int>(d->timePts.size()) > d->history) {
        d->timePts.pop_front();
        d->tpsPts.pop_front();
    }
    d->refresh();
}

int StepTimeChart::historyLength() const { return d->history; }
int StepTimeChart::pointCount() const { return static_cast<int>(d->time->count()); }
QChart* StepTimeChart::chart() const { return d->chart; }

// --- LoadHistogramChart -------------------------------------------------------------------------

struct LoadHistogramChart::Impl {
    QChart* chart = new QChart;
    QBarSeries* series = new QBarSeries;
    QBarSet* set = new QBarSet(QString());
    QBarCategoryAxis* x = new QBarCategoryAxis;
    QValueAxis* xLabels = new QValueAxis;
    QValueAxis* y = new QValueAxis;
    std::vector<int> counts;
    std::pair<double, double> range{0, 0};  // the bins' load range (relabel)
    int moeLayer = -2;  // the layer shown; -1: all layers pooled; -2: none yet

    // Qt Charts cuts a title that does not fit ("Expert load distribution, Mo..."): the longest
    // wording that fits the chart (title) and the plot's width (axis title).
    void fitTitles()
    {
        if (moeLayer < -1)
            return;  // no metrics yet: the constructor's title stands
        const QMarginsF margins = chart->margins();
        const double room = chart->size().width() - margins.left() - margins.right() - 20;
        const QString layer = QString::number(moeLayer);
        const QStringList titles =
            moeLayer >= 0 ? QStringList{LoadHistogramChart::tr("Expert load distribution, MoE layer %1").arg(layer),
                                        LoadHistogramChart::tr("Load distribution, layer %1").arg(layer),
                                        LoadHistogramChart::tr("Layer %1 load").arg(layer)}
                          : QStringList{LoadHistogramChart::tr("Expert load distribution, all layers pooled"),
                                        LoadHistogramChart::tr("Load distribution, all layers"),
                                        LoadHistogramChart::tr("All layers' load")};
        const QString title = longestThatFits(titles, chart->titleFont(), room);
        if (chart->title() != title)
            chart->setTitle(title);
        const QString axis = longestThatFits({LoadHistogramChart::tr("token-expert pairs per expert"),
                                              LoadHistogramChart::tr("pairs per expert"), LoadHistogramChart::tr("pairs")},
                                             xLabels->titleFont(), chart->plotArea().width());
        if (xLabels->titleText() != axis)
            xLabels->setTitleText(axis);
    }
};

LoadHistogramChart::LoadHistogramChart(QWidget* parent) : QWidget(parent), d(std::make_unique<Impl>())
{
    d->chart->setTitle(tr("Expert load distribution"));
    d->set->setLabel(tr("experts"));
    d->set->setColor(QColor(0x3b, 0x52, 0x8b));
    d->set->setBorderColor(QColor(0x3b, 0x52, 0x8b));
    d->series->append(d->set);
    d->series->setBarWidth(0.92);
    d->chart->legend()->hide();
    addBarAxes(d->chart, d->series, d->x, d->xLabels, d->y, tr("token-expert pairs per expert"), tr("experts"),
               QStringLiteral("%d"));
    embedChart(this, d->chart);
    // A new size or font (presentation mode) lays the chart out again: the titles follow.
    connect(d->chart, &QChart::plotAreaChanged, this, [this] { d->fitTitles(); });
}

LoadHistogramChart::~LoadHistogramChart() = default;

void LoadHistogramChart::relabel()
{
    if (d->range.second <= d->range.first)
        return;
    const QString widest = QString::number(std::max(std::abs(d->range.first), std::abs(d->range.second)), 'f', 0);
    labelAxis(d->xLabels, d->range.first, d->range.second, 0, labelsThatFit(d->xLabels, widest, width(), 8));
}

void LoadHistogramChart::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    relabel();
}

void LoadHistogramChart::setMetrics(const StepMetrics& m, MoeLayers layers)
{
    std::vector<double> loads;
    const int moeLayer = layers.isAll() ? -1 : layers.layer().value;
    if (moeLayer >= 0 && moeLayer < static_cast<int>(m.layers.size())) {
        for (auto v : m.layers[static_cast<std::size_t>(moeLayer)].expert_load)
            loads.push_back(static_cast<double>(v));
    } else {
        for (const LayerMetrics& l : m.layers)
            for (auto v : l.expert_load)
                loads.push_back(static_cast<double>(v));
    }
    // The titles change with the layer shown (and the chart's size: plotAreaChanged), not every step.
    const int shown = moeLayer >= 0 && moeLayer < static_cast<int>(m.layers.size()) ? moeLayer : -1;
    if (shown != d->moeLayer) {
        d->moeLayer = shown;
        d->fitTitles();
    }
    constexpr int kBins = 20;
    d->counts.assign(loads.empty() ? 0 : kBins, 0);
    QStringList labels;
    if (!loads.empty()) {
        const auto [mn, mx] = std::minmax_element(loads.begin(), loads.end());
        const double lo = *mn;
        const double width = std::max((*mx - lo) / kBins, 1e-9);
        for (double v : loads)
            ++d->counts[static_cast<std::size_t>(std::clamp(static_cast<int>((v - lo) / width), 0, kBins - 1))];
        for (int i = 0; i < kBins; ++i)
            labels << QString::number(i);
        d->range = {lo, lo + kBins * width};
        relabel();
    }
    d->x->setCategories(labels);
    d->set->remove(0, d->set->count());
    int hi = 0;
    for (int c : d->counts) {
        d->set->append(c);
        hi = std::max(hi, c);
    }
    setNiceRange(d->y, 0, std::max(1, hi + hi / 10 + 1));
}

int LoadHistogramChart::binCount() const { return static_cast<int>(d->set->count()); }
std::vector<int> LoadHistogramChart::binCounts() const { return d->counts; }
QChart* LoadHistogramChart::chart() const { return d->chart; }

}  // namespace moex::views
