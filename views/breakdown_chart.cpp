// The per-GPU step time breakdown: stacked bars (expert compute, attention, dispatch, combine,
// idle) per GPU or engine rank, its legend fitted to the chart's width.
#include "views/chart_axes.h"
#include "views/charts.h"

#include "metrics/gpu_busy.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QCursor>
#include <QFontMetricsF>
#include <QLocale>
#include <QStackedBarSeries>
#include <QToolTip>
#include <QValueAxis>

#include <algorithm>
#include <array>
#include <cmath>

namespace moex::views {

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
    // The values' unit in µs: 1 (µs) or 1000 (ms), from the tallest bar (timeUnitFor).
    double unit = 1.0;

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
        const bool ms = unit > 1;
        const QString title = longestThatFits({ms ? GpuBreakdownChart::tr("ms per step") : GpuBreakdownChart::tr("µs per step"),
                                               ms ? GpuBreakdownChart::tr("ms") : GpuBreakdownChart::tr("µs")},
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
    const bool ms = d->unit > 1;
    for (std::size_t i = 0; i < d->sets.size() && index >= 0 && index < d->sets[i]->count(); ++i)
        html += QStringLiteral("<tr><td>%1</td><td align=right>&nbsp;%2 %3</td></tr>")
                    .arg(tr(names[i]), QLocale().toString(d->sets[i]->at(index), 'f', ms ? 2 : 0), ms ? tr("ms") : tr("µs"));
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
    for (std::size_t i = 0; i < m.gpus.size(); ++i) {
        const GpuStepSplit g = gpuStepSplit(m, i);  // the communication not hidden, and idle
        values[0] << g.compute_us;
        values[1] << g.attention_us;
        values[2] << g.dispatch_us;
        values[3] << g.combine_us;
        values[4] << g.idle_us;
        hi = std::max(hi, g.compute_us + g.attention_us + g.dispatch_us + g.combine_us + g.idle_us);
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
    const double unit = timeUnitFor(hi, d->unit);
    const bool unitChanged = unit != d->unit;
    d->unit = unit;
    for (auto& list : values)
        for (qreal& v : list)
            v /= unit;
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
    setNiceRange(d->y, 0, hi > 0 ? hi * 1.05 / unit : 1);
    if (unitChanged)
        d->fitAxisTitle();
    if (d->selected >= n)
        d->selected = -1;
    setSelectedGpu(GpuId(d->selected));
}

std::vector<double> GpuBreakdownChart::barValues(int gpu) const
{
    std::vector<double> out;
    for (const QBarSet* set : d->sets)
        if (gpu >= 0 && gpu < set->count())
            out.push_back(set->at(gpu) * d->unit);
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

QString GpuBreakdownChart::valueUnit() const { return d->unit > 1 ? tr("ms") : tr("µs"); }

int GpuBreakdownChart::barCount() const { return d->sets.empty() ? 0 : static_cast<int>(d->sets.front()->count()); }
QChart* GpuBreakdownChart::chart() const { return d->chart; }

}  // namespace moex::views
