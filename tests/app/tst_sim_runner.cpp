// SimRunner: steps in its worker thread, coalesces to <= 30 updates/s, pauses, resets to step 0,
// and re-simulates synchronously after an edit with identical numbers when the edit is undone.
#include "scenario_document.h"
#include "sim_runner.h"

#include "metrics/step_metrics.h"

#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTest>

using moex::session::MetricsPtr;
using moex::session::ScenarioDocument;
using moex::session::SimRunner;

namespace {

QString sample(const char* name)
{
    return QStringLiteral(MOEX_SOURCE_DIR "/samples/scenarios/") + QLatin1String(name);
}

MetricsPtr lastOf(const QSignalSpy& spy)
{
    return spy.isEmpty() ? nullptr : spy.last().first().value<MetricsPtr>();
}

}  // namespace

class TestSimRunner : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { QVERIFY(m_doc.load(sample("mixtral-8x7b-decode-hgx-h100.yaml"))); }

    void stepEmitsMetrics()
    {
        SimRunner runner;
        QSignalSpy spy(&runner, &SimRunner::metricsReady);
        runner.setScenario(m_doc.scenario(), m_doc.placement());
        QTRY_VERIFY(spy.count() >= 1);
        MetricsPtr first = lastOf(spy);
        QVERIFY(first);
        QCOMPARE(first->step, 0);
        QCOMPARE(QString::fromStdString(first->source), QStringLiteral("sim"));
        QCOMPARE(runner.sourceName(), QStringLiteral("sim"));
        QVERIFY(first->summary.step_time_us > 0);
        QCOMPARE(static_cast<int>(first->gpus.size()), 8);
        runner.step();
        QTRY_VERIFY(spy.count() >= 2);
        QCOMPARE(lastOf(spy)->step, 1);
    }

    void coalescesToThirtyPerSecond()
    {
        SimRunner runner;
        QSignalSpy spy(&runner, &SimRunner::metricsReady);
        runner.setScenario(m_doc.scenario(), m_doc.placement());
        QTRY_VERIFY(spy.count() >= 1);
        runner.setStepsPerSecond(0);  // as fast as possible
        spy.clear();
        QElapsedTimer t;
        t.start();
        runner.run();
        QTest::qWait(1000);
        runner.pause();
        const double seconds = t.elapsed() / 1000.0;
        const int updates = static_cast<int>(spy.count());
        QVERIFY2(updates <= 30 * seconds + 2, qPrintable(QStringLiteral("%1 updates in %2 s").arg(updates).arg(seconds)));
        QVERIFY(updates >= 5);
        // The steps ran faster than they were shown: step numbers jump.
        QVERIFY(lastOf(spy)->step >= updates - 1);
    }

    void pauseStops()
    {
        SimRunner runner;
        QSignalSpy spy(&runner, &SimRunner::metricsReady);
        QSignalSpy running(&runner, &SimRunner::runningChanged);
        runner.setScenario(m_doc.scenario(), m_doc.placement());
        runner.setStepsPerSecond(50);
        runner.run();
        QVERIFY(runner.isRunning());
        QTRY_VERIFY(spy.count() >= 3);
        runner.pause();
        QVERIFY(!runner.isRunning());
        QCOMPARE(running.count(), 2);
        QTest::qWait(150);  // let in-flight steps land
        const int after = static_cast<int>(spy.count());
        QTest::qWait(400);
        QCOMPARE(static_cast<int>(spy.count()), after);
    }

    void resetRestartsAtStepZero()
    {
        SimRunner runner;
        QSignalSpy spy(&runner, &SimRunner::metricsReady);
        runner.setScenario(m_doc.scenario(), m_doc.placement());
        QTRY_VERIFY(spy.count() >= 1);
        const MetricsPtr zero = lastOf(spy);
        for (int i = 0; i < 3; ++i) {
            runner.step();
            QTest::qWait(40);
        }
        QTRY_COMPARE(runner.latest()->step, 3);
        runner.reset();
        QTRY_COMPARE(runner.latest()->step, 0);
        // Same seed, same first step.
        QCOMPARE(runner.latest()->summary.step_time_us, zero->summary.step_time_us);
    }

    void simulateOnceIsImmediateAndExact()
    {
        ScenarioDocument doc;
        QVERIFY(doc.load(sample("deepseek-r1-decode-nvl72.yaml")));
        SimRunner runner;
        const MetricsPtr base = runner.simulateScenario(doc.scenario(), doc.placement());
        QVERIFY(base);
        const ScenarioDocument::State before = doc.state();
        // Move the hottest expert of layer 0 onto GPU 0 alongside its own experts.
        const auto& load = base->layers[0].expert_load;
        const int hot = static_cast<int>(std::max_element(load.begin(), load.end()) - load.begin());
        int from = -1;
        for (int g = 0; g < 72 && from < 0; ++g)
            for (auto e : doc.placement().layers[0].gpu_slots[static_cast<std::size_t>(g)])
                if (e.value == hot)
                    from = g;
        int to = (from + 1) % 72;
        QString r = doc.moveExpert(0, hot, from, to);
        for (int k = 2; !r.isEmpty() && k < 72; ++k)
            r = doc.moveExpert(0, hot, from, to = (from + k) % 72);
        QVERIFY2(r.isEmpty(), qPrintable(r));
        QElapsedTimer t;
        t.start();
        const MetricsPtr edited = runner.simulateOnce(doc.placement(), doc.scenario().speeds);
        qInfo("re-simulation after an edit: %lld ms", static_cast<long long>(t.elapsed()));
        QVERIFY(edited);
        QCOMPARE(edited->step, base->step);
        QVERIFY(edited->layers[0].gpu_load != base->layers[0].gpu_load);
        doc.restoreState(before);
        const MetricsPtr undone = runner.simulateOnce(doc.placement(), doc.scenario().speeds);
        QCOMPARE(undone->summary.step_time_us, base->summary.step_time_us);
        QCOMPARE(undone->summary.tokens_per_s, base->summary.tokens_per_s);
        for (std::size_t g = 0; g < base->gpus.size(); ++g) {
            QCOMPARE(undone->gpus[g].compute_us, base->gpus[g].compute_us);
            QCOMPARE(undone->gpus[g].idle_us, base->gpus[g].idle_us);
        }
    }

private:
    ScenarioDocument m_doc;
};

QTEST_GUILESS_MAIN(TestSimRunner)
#include "tst_sim_runner.moc"
