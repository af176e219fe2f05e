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
        chart.setSelectedGpu(3);
        QVERIFY(!chart.grab().isNull());
    }

    void histogramCountsEveryExpert()
    {
        LoadHistogramChart chart;
        chart.setMetrics(m_nvl.metrics, 0);
        QCOMPARE(chart.binCount(), 20);
        int total = 0;
        for (int c : chart.binCounts())
            total += c;
        QCOMPARE(total, 256);  // DeepSeek-R1: every routed expert in one bin
        chart.setMetrics(m_nvl.metrics, -1);
        total = 0;
        for (int c : chart.binCounts())
            total += c;
        QCOMPARE(total, 256 * static_cast<int>(m_nvl.metrics.layers.size()));
    }
};

QTEST_MAIN(TestCharts)
#include "tst_charts.moc"
