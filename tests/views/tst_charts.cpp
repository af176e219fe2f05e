#include "views/charts.h"

#include "views_fixture.h"

#include <QChart>
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
        // overlap hides is not stacked on top of the compute it ran beside.
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
                if (QLatin1String(overlap) == QLatin1String("none")) {  // nothing hides: all of it shown
                    QVERIFY(std::abs(v[2] - m.dispatch_us) <= 1e-6 * step);
                    QVERIFY(std::abs(v[3] - m.combine_us) <= 1e-6 * step);
                }
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
