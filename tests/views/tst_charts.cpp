#include "views/charts.h"

#include "views_fixture.h"

#include <QApplication>
#include <QChart>
#include <QFontMetricsF>
#include <QGraphicsScene>
#include <QGraphicsTextItem>
#include <QLegend>
#include <QLineSeries>
#include <QSignalSpy>
#include <QValueAxis>

#include <cmath>
#include <QTest>

using namespace moex::views;
using namespace moex::views::test;

class TestCharts : public QObject {
    Q_OBJECT
private:
    Sample m_nvl;

private slots:
    void initTestCase() { m_nvl = loadSample(samplePath("deepseek-r1-decode-nvl72.yaml")); }

    void stepChartKeepsHistoryLength()
    {
        StepTimeChart chart;
        QCOMPARE(chart.historyLength(), 200);
        chart.setHistoryLength(10);
        moex::StepMetrics m = m_nvl.metrics;
        for (int i = 0; i < 25; ++i) {
            m.step = i;
            chart.addStep(m);
            QCOMPARE(chart.pointCount(), std::min(i + 1, 10));
        }
        chart.setHistoryLength(4);
        QCOMPARE(chart.pointCount(), 4);
        chart.clear();
        QCOMPARE(chart.pointCount(), 0);
    }

    // Throughput in thousands where it reaches 1,000 tokens/s (a rack), in tokens/s below (the CPU
    // engine's 13 tokens/s read "0.013 k tokens/s"); the whole history takes the one unit.
    void throughputUnitFollowsItsScale()
    {
        StepTimeChart chart;
        auto* tps = qobject_cast<QLineSeries*>(chart.chart()->series().at(1));
        QVERIFY(tps);
        moex::StepMetrics m = m_nvl.metrics;
        m.step = 0;
        m.summary.tokens_per_s = 13.0;
        chart.addStep(m);
        QCOMPARE(tps->name(), QStringLiteral("tokens/s"));
        QCOMPARE(tps->at(0).y(), 13.0);
        m.step = 1;
        m.summary.tokens_per_s = 511377.0;
        chart.addStep(m);
        QCOMPARE(tps->name(), QStringLiteral("k tokens/s"));
        QCOMPARE(tps->at(0).y(), 0.013);
        QCOMPARE(tps->at(1).y(), 511.377);
        chart.setHistoryLength(1);  // the rack's step alone: still thousands
        QCOMPARE(tps->name(), QStringLiteral("k tokens/s"));
        chart.clear();
        m.summary.tokens_per_s = 999.0;
        chart.addStep(m);
        QCOMPARE(tps->name(), QStringLiteral("tokens/s"));
        QCOMPARE(tps->at(0).y(), 999.0);
    }

    // The breakdown's value axis in ms where the tallest bar reaches 10 ms (the rack's 18 ms step
    // read "18000 µs per step", the CPU engine's "400000"), in µs below 8 ms, and as it was in
    // between; barValues stay in µs, the tooltip follows the axis.
    void breakdownUnitFollowsTheStep()
    {
        const auto scaled = [](const moex::StepMetrics& m, double f) { return moex::views::test::scaledStep(m, f); };
        const moex::StepMetrics& rack = m_nvl.metrics;
        const double step = rack.summary.step_time_us;
        QVERIFY(step > 10000);  // the sample's decode step on NVL72: 18 ms
        GpuBreakdownChart chart;
        auto* y = qobject_cast<QValueAxis*>(chart.chart()->axes(Qt::Vertical).at(0));
        QVERIFY(y);
        const auto barTotal = [&chart](int g) {
            double total = 0;
            for (double v : chart.barValues(g))
                total += v;
            return total;
        };
        chart.setMetrics(rack);
        QCOMPARE(chart.valueUnit(), QStringLiteral("ms"));
        QVERIFY(y->titleText().startsWith(QStringLiteral("ms")));
        QVERIFY(y->max() >= step / 1000 && y->max() < step / 1000 * 1.5);
        QVERIFY(std::abs(barTotal(0) - step) <= 1e-6 * step);
        QVERIFY(chart.barToolTip(0).contains(QStringLiteral(" ms<")));
        chart.setMetrics(scaled(rack, 9000.0 / step));  // between the edges: stays in ms
        QCOMPARE(chart.valueUnit(), QStringLiteral("ms"));
        chart.setMetrics(scaled(rack, 5000.0 / step));
        QCOMPARE(chart.valueUnit(), QStringLiteral("µs"));
        QVERIFY(y->titleText().startsWith(QStringLiteral("µs")));
        QVERIFY(y->max() >= 5000 && y->max() < 7500);
        QVERIFY(std::abs(barTotal(0) - 5000) <= 1e-6 * 5000);
        QVERIFY(chart.barToolTip(0).contains(QStringLiteral(" µs<")));
        chart.setMetrics(scaled(rack, 9000.0 / step));  // between the edges: stays in µs
        QCOMPARE(chart.valueUnit(), QStringLiteral("µs"));
        for (double ms : {400.0, 536.0, 536.0, 536.0}) {  // the CPU engine's steps, and the axis does not creep up
            chart.setMetrics(scaled(rack, ms * 1000 / step));
            QCOMPARE(chart.valueUnit(), QStringLiteral("ms"));
            QVERIFY2(y->max() >= ms && y->max() <= 1.5 * ms, qPrintable(QStringLiteral("%1 ms: axis to %2").arg(ms).arg(y->max())));
        }
    }

    // The breakdown's legend in one row: Qt Charts cut every name to "dispatch (not..." in a
    // 540-pixel chart (the Charts dock of a 1280-pixel window). Its names shorten by tiers instead,
    // so that no legend text is cut, at any width or in presentation fonts; where even the
    // shortest names do not fit, they come in a smaller font (never below 7.5 points), so that the
    // Charts dock of a 1024-pixel window in presentation mode (fonts 1.25 times, a 420-pixel chart)
    // keeps its legend; only narrower charts lose it. A wide chart has the full names, and a bar's
    // tooltip always.
    void breakdownLegendIsNeverCut()
    {
        for (const double scale : {1.0, 1.25, 1.5}) {
            for (const int width : {260, 400, 420, 540, 700, 1100}) {
                GpuBreakdownChart chart;
                if (scale != 1.0)
                    scaleChartFonts(chart.chart(), scale);
                chart.resize(width, 260);
                chart.show();
                QVERIFY(QTest::qWaitForWindowExposed(&chart));
                chart.setMetrics(m_nvl.metrics);
                QApplication::processEvents();
                QLegend* legend = chart.chart()->legend();
                QStringList texts;
                for (QGraphicsItem* item : chart.chart()->scene()->items()) {
                    if (auto* text = qgraphicsitem_cast<QGraphicsTextItem*>(item); text && legend->isAncestorOf(text))
                        texts << text->toPlainText();
                }
                // The bar's tooltip names every part in full, legend or not.
                const QString tip = chart.barToolTip(3);
                QVERIFY2(tip.contains(QStringLiteral("GPU 3")) && tip.contains(QStringLiteral("expert compute"))
                             && tip.contains(QStringLiteral("combine (not hidden)")),
                         qPrintable(tip));
                // The value axis's title whole along the plot ("ms per step" for the rack's 18 ms, or
                // "ms" where that is cut).
                const QAbstractAxis* yAxis = chart.chart()->axes(Qt::Vertical).constFirst();
                QVERIFY2(QFontMetricsF(yAxis->titleFont()).horizontalAdvance(yAxis->titleText()) <= chart.chart()->plotArea().height()
                             || yAxis->titleText() == QStringLiteral("ms"),
                         qPrintable(QStringLiteral("%1 px x %2: '%3'").arg(width).arg(scale).arg(yAxis->titleText())));
                if (width >= 540 && scale == 1.0)
                    QCOMPARE(yAxis->titleText(), QStringLiteral("ms per step"));
                if (!chart.legendShown()) {
                    QVERIFY2(width < 420 || (scale > 1.25 && width < 540),
                             qPrintable(QStringLiteral("no legend at %1 px x %2").arg(width).arg(scale)));
                    continue;
                }
                QVERIFY2(legend->font().pointSizeF() >= 7.5, qPrintable(QString::number(legend->font().pointSizeF())));
                QCOMPARE(texts.size(), 5);
                for (const QString& t : texts)
                    QVERIFY2(!t.endsWith(QLatin1String("...")) && !t.endsWith(QChar(0x2026)),
                             qPrintable(QStringLiteral("%1 px x %2: '%3'").arg(width).arg(scale).arg(t)));
                if (width >= 1100 && scale == 1.0)
                    QVERIFY2(texts.contains(QStringLiteral("expert compute")) && texts.contains(QStringLiteral("dispatch (not hidden)")),
                             qPrintable(texts.join(QLatin1String(", "))));
            }
        }
    }

    // The load histogram's title and axis title in words that fit: Qt Charts cut them to "Expert
    // load distribution, Mo..." and "token-expert pairs ..." in a 1024-pixel window in
    // presentation mode. No text of the chart ends cut, at any of these widths and fonts; a wide
    // chart has the full wording.
    void histogramTitlesAreNeverCut()
    {
        for (const double scale : {1.0, 1.5}) {
            for (const int width : {260, 330, 540, 900}) {
                LoadHistogramChart chart;
                if (scale != 1.0)
                    scaleChartFonts(chart.chart(), scale);
                chart.resize(width, 260);
                chart.show();
                QVERIFY(QTest::qWaitForWindowExposed(&chart));
                chart.setMetrics(m_nvl.metrics, moex::MoeLayers::only(moex::MoeLayerId(0)));
                QApplication::processEvents();
                for (QGraphicsItem* item : chart.chart()->scene()->items()) {
                    if (auto* text = qgraphicsitem_cast<QGraphicsTextItem*>(item); text && text->isVisible()) {
                        const QString t = text->toPlainText();
                        QVERIFY2(!t.endsWith(QLatin1String("...")) && !t.endsWith(QChar(0x2026)),
                                 qPrintable(QStringLiteral("%1 px x %2: '%3'").arg(width).arg(scale).arg(t)));
                    }
                }
                if (width >= 900 && scale == 1.0)
                    QCOMPARE(chart.chart()->title(), QStringLiteral("Expert load distribution, MoE layer 0"));
            }
        }
    }

    // Charts too narrow for their value axes (a 1024-pixel window, presentation fonts): the axes'
    // titles give way, then the throughput axis, so that every axis shown keeps its labels within
    // the share of the width Qt Charts grants it (0.4 of it over the axes shown) and none is cut
    // to "1..."; a wide chart keeps both axes with their titles.
    void narrowStepChartKeepsItsLabels()
    {
        for (const int width : {200, 300, 700}) {
            StepTimeChart chart;
            scaleChartFonts(chart.chart(), 1.5);
            chart.resize(width, 260);
            chart.show();
            QVERIFY(QTest::qWaitForWindowExposed(&chart));
            moex::StepMetrics m = m_nvl.metrics;
            for (int i = 0; i < 8; ++i) {
                m.step = i;
                m.summary.step_time_us = 17'950.0 + 30.0 * i;  // labels like "17.95": four digits
                chart.addStep(m);
            }
            QApplication::processEvents();
            const QMarginsF margins = chart.chart()->margins();
            const auto vertical = chart.chart()->axes(Qt::Vertical);
            const auto shown = std::count_if(vertical.begin(), vertical.end(), [](QAbstractAxis* a) { return a->isVisible(); });
            QCOMPARE(shown, chart.throughputAxisShown() ? 2 : 1);
            const double axisRoom = 0.4 * (chart.chart()->size().width() - margins.left() - margins.right()) / shown;
            for (QAbstractAxis* a : vertical) {
                auto* axis = qobject_cast<QValueAxis*>(a);
                QVERIFY(axis);
                if (!axis->isVisible())
                    continue;
                QCOMPARE(axis->isTitleVisible(), chart.valueAxisTitlesShown());
                // What the axis needs: its widest label, the tick and padding, the title if shown.
                const QFontMetricsF labels(axis->labelsFont());
                double widest = 0;
                for (int i = 0; i < axis->tickCount(); ++i)
                    widest = std::max(widest, labels.horizontalAdvance(QString::asprintf(
                                                  "%.4g", axis->min() + (axis->max() - axis->min()) * i / (axis->tickCount() - 1))));
                const double need = widest + 16 + (axis->isTitleVisible() ? QFontMetricsF(axis->titleFont()).height() + 4 : 0.0);
                QVERIFY2(need <= axisRoom, qPrintable(QStringLiteral("%1 px: axis needs %2 of %3").arg(width).arg(need).arg(axisRoom)));
            }
            QCOMPARE(chart.valueAxisTitlesShown() && chart.throughputAxisShown(), width >= 700);
            QCOMPARE(chart.throughputAxisShown(), width >= 300);
        }
    }

    // The step axis labels whole steps: at step 0 (range 0..1), after 7 and after 200 steps its
    // ticks are whole numbers one or more steps apart, at most six of them ("0 0 0 0 1" before).
    void stepAxisLabelsWholeSteps()
    {
        StepTimeChart chart;
        chart.resize(400, 300);
        moex::StepMetrics m = m_nvl.metrics;
        int added = 0;
        for (int upTo : {1, 8, 201}) {
            for (; added < upTo; ++added) {
                m.step = added;
                chart.addStep(m);
            }
            const auto axes = chart.chart()->axes(Qt::Horizontal);
            QCOMPARE(axes.size(), 1);
            auto* x = qobject_cast<QValueAxis*>(axes.front());
            QVERIFY(x);
            QCOMPARE(x->tickType(), QValueAxis::TicksDynamic);
            QVERIFY(x->tickInterval() >= 1.0);
            QCOMPARE(x->tickInterval(), std::round(x->tickInterval()));
            QCOMPARE(x->tickAnchor(), std::round(x->tickAnchor()));
            QVERIFY((x->max() - x->min()) / x->tickInterval() + 1 <= 6.0 + 1e-9);
        }
    }

    void breakdownHasOneBarPerGpu()
    {
        GpuBreakdownChart chart;
        chart.resize(1000, 400);
        chart.setMetrics(m_nvl.metrics);
        QCOMPARE(chart.barCount(), 72);
        moex::StepMetrics small = m_nvl.metrics;
        small.gpus.resize(8);
        chart.setMetrics(small);
        QCOMPARE(chart.barCount(), 8);
        chart.setSelectedGpu(moex::GpuId(3));
        QVERIFY(!chart.grab().isNull());
    }

    void breakdownBarsAddUpToTheStep()
    {
        // With and without two-batch overlap every bar is the step time: communication that
        // overlap hides is not stacked on top of the compute it ran beside. What no compute covers
        // (the layers' exposed communication) every GPU waits out, whatever its own traffic: the
        // same dispatch + combine on every bar, so idle is waiting for slower GPUs only.
        for (const char* overlap : {"two-batch", "none"}) {
            Sample s;
            s.scenario = moex::loadScenarioFile(samplePath("deepseek-r1-decode-hgx-h200x8.yaml"), {{"overlap", overlap}});
            s.placement = moex::resolvePlacement(s.scenario);
            auto routing = moex::makeRoutingSource(s.scenario);
            moex::RoutingSample sample;
            routing->next(sample);
            moex::Simulator sim(s.scenario, s.placement, moex::resolveCalibration(s.scenario));
            sim.step(sample, s.metrics);
            GpuBreakdownChart chart;
            chart.setMetrics(s.metrics);
            const double step = s.metrics.summary.step_time_us;
            bool hidden = false;
            for (int g = 0; g < chart.barCount(); ++g) {
                const auto v = chart.barValues(g);
                QCOMPARE(v.size(), std::size_t(5));
                const double total = v[0] + v[1] + v[2] + v[3] + v[4];
                QVERIFY2(std::abs(total - step) <= 1e-6 * step, qPrintable(QStringLiteral("%1, GPU %2: bar %3 us, step %4 us")
                                                                              .arg(QLatin1String(overlap)).arg(g).arg(total).arg(step)));
                const moex::GpuMetrics& m = s.metrics.gpus[static_cast<std::size_t>(g)];
                hidden = hidden || v[2] + v[3] < m.dispatch_us + m.combine_us - 1e-6;
                const moex::StepTotals& t = s.metrics.summary;
                QVERIFY2(std::abs(v[2] + v[3] - t.comm_exposed_us) <= 1e-6 * step,
                         qPrintable(QStringLiteral("%1, GPU %2: %3 us shown, %4 us exposed").arg(QLatin1String(overlap)).arg(g)
                                        .arg(v[2] + v[3]).arg(t.comm_exposed_us)));
                QVERIFY(std::abs(v[2] * m.combine_us - v[3] * m.dispatch_us) <= 1e-6 * step * step);  // in its own proportion
                if (QLatin1String(overlap) == QLatin1String("none"))  // nothing hides: the layers' whole exchange
                    QVERIFY(std::abs(t.comm_exposed_us - (t.dispatch_us + t.combine_us)) <= 1e-6 * step);
                else
                    QVERIFY(t.comm_exposed_us > 0 && t.comm_exposed_us < t.dispatch_us + t.combine_us);
            }
            QCOMPARE(hidden, QLatin1String(overlap) == QLatin1String("two-batch"));
        }
    }

    void histogramCountsEveryExpert()
    {
        LoadHistogramChart chart;
        chart.setMetrics(m_nvl.metrics, moex::MoeLayers::only(moex::MoeLayerId(0)));
        QCOMPARE(chart.binCount(), 20);
        int total = 0;
        for (int c : chart.binCounts())
            total += c;
        QCOMPARE(total, 256);  // DeepSeek-R1: every routed expert in one bin
        chart.setMetrics(m_nvl.metrics, moex::MoeLayers::all());
        total = 0;
        for (int c : chart.binCounts())
            total += c;
        QCOMPARE(total, 256 * static_cast<int>(m_nvl.metrics.layers.size()));
    }
};

QTEST_MAIN(TestCharts)
#include "tst_charts.moc"
