#include "views/charts.h"

#include "views_fixture.h"

#include <QSignalSpy>
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
