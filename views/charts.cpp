// Qt Charts views of StepMetrics: step time and tokens/s over steps, per-GPU time breakdown,
// expert-load histogram.
#include "views/charts.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QCursor>
#include <QLocale>
#include <QToolTip>
#include <QFontMetricsF>
#include <QLineSeries>
#include <QStackedBarSeries>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
#include <array>
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

namespace {

QFont scaledFont(QFont f, double factor)
{
    if (f.pointSizeF() > 0)
        f.setPointSizeF(f.pointSizeF() * factor);
    else if (f.pixelSize() > 0)
        f.setPixelSize(std::max(1, static_cast<int>(std::lround(f.pixelSize() * factor))));
    return f;
}

}  // namespace

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
    std::deque<QPointF> timePts, tpsPts;
    int history = 200;

    void refresh()
    {
        time->replace(QList<QPointF>(timePts.begin(), timePts.end()));
        tps->replace(QList<QPointF>(tpsPts.begin(), tpsPts.end()));
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
        auto range = [](const std::deque<QPointF>& pts, QValueAxis* axis) {
            double low = pts.front().y();
            double high = low;
            for (const QPointF& p : pts) {
                low = std::min(low, p.y());
                high = std::max(high, p.y());
            }
            const double pad = std::max((high - low) * 0.1, std::abs(high) * 0.02 + 1e-9);
            axis->setRange(std::max(0.0, low - pad), high + pad);
            axis->applyNiceNumbers();
        };
        range(timePts, yTime);
        range(tpsPts, yTps);
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
    d->tpsPts.emplace_back(m.step, m.summary.tokens_per_s / 1e3);  // plotted in thousands
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

// --- GpuBreakdownChart --------------------------------------------------------------------------

// The first of `options` (longest first) whose text fits `room` pixels in `font`, else the last.
static QString longestThatFits(const QStringList& options, const QFont& font, double room)
{
    const QFontMetricsF fm(font);
    for (const QString& o : options)
        if (room <= 0 || fm.horizontalAdvance(o) <= room)
            return o;
    return options.back();
}

// Bars sit on a hidden category axis (one category per bar); a value axis over the same span
// carries the labels, so that 72 GPUs or 20 load bins get a few readable ticks instead of
// elided category names.

static void labelAxis(QValueAxis* axis, double lo, double hi, int bars, int maxLabels)
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

// As many labels as fit side by side in a chart `chartWidth` wide (labels as wide as `widest`),
// at most `cap`, at least 2: a narrow chart or a larger presentation font gets fewer, never
// labels cut to "...".
static int labelsThatFit(const QValueAxis* axis, const QString& widest, int chartWidth, int cap)
{
    const QFontMetrics fm(axis->labelsFont());
    const int room = std::max(60, chartWidth - 90);  // the value axis and margins
    const int each = fm.horizontalAdvance(widest) + fm.horizontalAdvance(QStringLiteral("00"));
    return std::clamp(room / std::max(1, each), 2, cap);
}

// The series on a hidden category axis, labelled by a value axis over the same span (labelAxis),
// with a value axis for the heights.
static void addBarAxes(QChart* chart, QAbstractBarSeries* series, QBarCategoryAxis* x, QValueAxis* xLabels,
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

struct GpuBreakdownChart::Impl {
    QChart* chart = new QChart;
    QStackedBarSeries* series = new QStackedBarSeries;
    QBarCategoryAxis* x = new QBarCategoryAxis;
    QValueAxis* xLabels = new QValueAxis;
    QValueAxis* y = new QValueAxis;
    std::vector<QBarSet*> sets;
    int bars = 0;
    int labels = -1;  // x labels laid out for (relabel)
    int selected = -1;
    int legendTier = 0;
    double legendScale = 1.0;  // the legend's font against the one the window gave the chart (fitLegend)
    bool ranks = false;  // bars are the local engine's ranks (setBarsAreRanks)

    // Qt Charts lays a top legend out in one row and cuts every name where they do not all fit
    // ("dispatch (not..."): the names are the longest of three tiers whose row fits the chart;
    // where not even the shortest fits (a narrow chart in presentation fonts), the shortest names
    // in a smaller font (kSmallLegend of it, not below kSmallestLegendPt); where that does not fit
    // either ("i...", "c..."), the legend goes (the tooltip of a bar names its parts). Qt's rule
    // (legendlayout.cpp): the markers' widths (the text, its marker and padding: 20 pixels at a
    // 14-pixel font, 23 at 21) must stay below the legend's width (the chart's less its margins
    // and 18 pixels) less each marker's margin (4): counted here with a pixel to spare.
    static constexpr double kSmallLegend = 0.8;
    static constexpr double kSmallestLegendPt = 7.5;
    static const std::array<std::array<const char*, 5>, 3>& legendTiers()
    {
        static const std::array<std::array<const char*, 5>, 3> tiers = {{
            {QT_TR_NOOP("expert compute"), QT_TR_NOOP("attention + dense"), QT_TR_NOOP("dispatch (not hidden)"),
             QT_TR_NOOP("combine (not hidden)"), QT_TR_NOOP("idle")},
            {QT_TR_NOOP("compute"), QT_TR_NOOP("attention"), QT_TR_NOOP("dispatch (not hidden)"),
             QT_TR_NOOP("combine (not hidden)"), QT_TR_NOOP("idle")},
            {QT_TR_NOOP("compute"), QT_TR_NOOP("attention"), QT_TR_NOOP("dispatch"), QT_TR_NOOP("combine"),
             QT_TR_NOOP("idle")},
        }};
        return tiers;
    }
    [[nodiscard]] bool tierFits(int tier, const QFont& font, double room) const
    {
        const QFontMetricsF fm(font);
        const double perName = 21 + 0.45 * fm.height();
        double need = 0;
        for (const char* name : legendTiers()[static_cast<std::size_t>(tier)])
            need += fm.horizontalAdvance(GpuBreakdownChart::tr(name)) + perName;
        return room <= 0 || need <= room;
    }
    // The value axis's title along the plot's height: "µs" where "µs per step" would be cut (a
    // short chart, presentation fonts, the legend's row above).
    void fitAxisTitle()
    {
        const QString title = longestThatFits({GpuBreakdownChart::tr("µs per step"), GpuBreakdownChart::tr("µs")},
                                              y->titleFont(), chart->plotArea().height());
        if (y->titleText() != title)
            y->setTitleText(title);
    }
    void fitLegend()
    {
        // The font the window gave the legend: what it shows, unless fitLegend made it smaller
        // (presentation mode scales the shown font, so this scales back).
        const QFont nominal = scaledFont(chart->legend()->font(), 1.0 / legendScale);
        const QMarginsF margins = chart->margins();
        const double room = chart->size().width() - margins.left() - margins.right() - 18;
        const int tiers = static_cast<int>(legendTiers().size());
        int tier = 0;
        while (tier < tiers && !tierFits(tier, nominal, room))
            ++tier;
        double scale = 1.0;
        if (tier == tiers) {
            const QFont small = scaledFont(nominal, kSmallLegend);
            if ((small.pointSizeF() <= 0 || small.pointSizeF() >= kSmallestLegendPt) && tierFits(tiers - 1, small, room)) {
                tier = tiers - 1;
                scale = kSmallLegend;
            }
        }
        if (scale != legendScale) {
            chart->legend()->setFont(scaledFont(nominal, scale));
            legendScale = scale;
        }
        fitAxisTitle();
        if (tier == legendTier)
            return;
        legendTier = tier;
        chart->legend()->setVisible(tier < tiers);
        if (tier < tiers)
            for (std::size_t i = 0; i < sets.size(); ++i)
                sets[i]->setLabel(GpuBreakdownChart::tr(legendTiers()[static_cast<std::size_t>(tier)][i]));
    }
};

GpuBreakdownChart::GpuBreakdownChart(QWidget* parent) : QWidget(parent), d(std::make_unique<Impl>())
{
    d->chart->setTitle(tr("Per-GPU step time breakdown"));
    const auto& names = Impl::legendTiers()[0];
    const QColor colors[] = {QColor(0x1f, 0x77, 0xb4), QColor(0x9e, 0xc5, 0xe8), QColor(0xff, 0x7f, 0x0e),
                             QColor(0x2c, 0xa0, 0x2c), QColor(0xd0, 0xd4, 0xda)};
    for (std::size_t i = 0; i < names.size(); ++i) {
        auto* set = new QBarSet(tr(names[i]));
        set->setColor(colors[i]);
        set->setBorderColor(colors[i]);
        set->setSelectedColor(colors[i].darker(170));
        d->sets.push_back(set);
        d->series->append(set);
        // Hovering a bar names its parts in full, whatever the legend can show.
        connect(set, &QBarSet::hovered, this, [this](bool on, int index) {
            if (on)
                QToolTip::showText(QCursor::pos(), barToolTip(index), this);
            else
                QToolTip::hideText();
        });
        connect(set, &QBarSet::clicked, this, [this](int index) {
            setSelectedGpu(GpuId(index));
            emit gpuSelected(GpuId(index));
        });
    }
    d->series->setBarWidth(0.85);
    addBarAxes(d->chart, d->series, d->x, d->xLabels, d->y, tr("GPU"), tr("µs per step"), QStringLiteral("%.0f"));
    embedChart(this, d->chart);
    // A new size or font (presentation mode) lays the chart out again: the legend's names and
    // the axis title follow.
    connect(d->chart, &QChart::plotAreaChanged, this, [this] { d->fitLegend(); });
}

GpuBreakdownChart::~GpuBreakdownChart() = default;

QString GpuBreakdownChart::barToolTip(int index) const
{
    QString html = QStringLiteral("<b>%1 %2</b><table>").arg(d->ranks ? tr("Rank") : tr("GPU")).arg(index);
    const auto& names = Impl::legendTiers()[0];
    for (std::size_t i = 0; i < d->sets.size() && index >= 0 && index < d->sets[i]->count(); ++i)
        html += QStringLiteral("<tr><td>%1</td><td align=right>&nbsp;%2 µs</td></tr>")
                    .arg(tr(names[i]), QLocale().toString(d->sets[i]->at(index), 'f', 0));
    return html + QStringLiteral("</table>");
}

void GpuBreakdownChart::setBarsAreRanks(bool ranks)
{
    d->ranks = ranks;
    d->chart->setTitle(ranks ? tr("Per-rank step time breakdown (measured)") : tr("Per-GPU step time breakdown"));
    d->xLabels->setTitleText(ranks ? tr("engine rank") : tr("GPU"));
}

void GpuBreakdownChart::relabel()
{
    if (d->bars <= 0)
        return;
    const int fit = labelsThatFit(d->xLabels, QString::number(d->bars - 1), width(), 18);
    if (fit != d->labels) {
        labelAxis(d->xLabels, -0.5, d->bars - 0.5, d->bars, fit);
        d->labels = fit;
    }
}

void GpuBreakdownChart::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    relabel();
}

void GpuBreakdownChart::setMetrics(const StepMetrics& m)
{
    const int n = static_cast<int>(m.gpus.size());
    QList<qreal> values[5];
    double hi = 0;
    for (const GpuMetrics& g : m.gpus) {
        // The communication not hidden behind the GPU's compute: its busy time (the step less its
        // idle time) beyond compute and attention, shared out over dispatch and combine. Without
        // overlap that is all of it.
        const double work = g.compute_us + g.attention_us;
        const double comm = g.dispatch_us + g.combine_us;
        const double exposed = std::clamp(m.summary.step_time_us - g.idle_us - work, 0.0, comm);
        const double shown = comm > 0 ? exposed / comm : 0.0;
        values[0] << g.compute_us;
        values[1] << g.attention_us;
        values[2] << g.dispatch_us * shown;
        values[3] << g.combine_us * shown;
        values[4] << g.idle_us;
        hi = std::max(hi, work + exposed + g.idle_us);
    }
    if (n != d->bars) {
        QStringList cats;
        for (int i = 0; i < n; ++i)
            cats << QString::number(i);
        d->x->setCategories(cats);
        d->bars = n;
        d->labels = -1;
    }
    relabel();
    // Values replaced in place; only a change of the GPU count adds or removes bars (Qt Charts
    // rebuilds the items of every bar it is given anew: tens of ms for 72 GPUs on the UI thread).
    for (std::size_t i = 0; i < d->sets.size(); ++i) {
        QBarSet* set = d->sets[i];
        if (set->count() > n)
            set->remove(n, set->count() - n);
        const int keep = static_cast<int>(set->count());
        for (int k = 0; k < keep; ++k)
            set->replace(k, values[i][k]);
        if (keep < n)
            set->append(values[i].mid(keep));
    }
    d->y->setRange(0, hi > 0 ? hi * 1.05 : 1);
    d->y->applyNiceNumbers();
    if (d->selected >= n)
        d->selected = -1;
    setSelectedGpu(GpuId(d->selected));
}

std::vector<double> GpuBreakdownChart::barValues(int gpu) const
{
    std::vector<double> out;
    for (const QBarSet* set : d->sets)
        if (gpu >= 0 && gpu < set->count())
            out.push_back(set->at(gpu));
    return out;
}

void GpuBreakdownChart::setSelectedGpu(GpuId gpuId)
{
    const int gpu = gpuId.valid() ? gpuId.value : -1;
    d->selected = gpu;
    for (QBarSet* set : d->sets) {
        set->deselectAllBars();
        if (gpu >= 0 && gpu < set->count())
            set->selectBar(gpu);
    }
}

bool GpuBreakdownChart::legendShown() const { return d->chart->legend()->isVisible(); }

int GpuBreakdownChart::barCount() const { return d->sets.empty() ? 0 : static_cast<int>(d->sets.front()->count()); }
QChart* GpuBreakdownChart::chart() const { return d->chart; }

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
    d->y->setRange(0, std::max(1, hi + hi / 10 + 1));
    d->y->applyNiceNumbers();
}

int LoadHistogramChart::binCount() const { return static_cast<int>(d->set->count()); }
std::vector<int> LoadHistogramChart::binCounts() const { return d->counts; }
QChart* LoadHistogramChart::chart() const { return d->chart; }

}  // namespace moex::views
