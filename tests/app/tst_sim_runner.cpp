// SimRunner: steps in its worker thread, coalesces to at most one update per 1/30 s, pauses, resets to step 0,
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
using moex::ExpertId;
using moex::GpuId;
using moex::MoeLayerId;
using moex::MoeLayers;

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

// How long a wait on the worker may take before it counts as a failure: generous, because ctest
// runs tests side by side on 2-core machines (a cold DeepSeek-R1 configuration alone is ~0.2 s idle).
constexpr int kWaitMs = 30000;

class TestSimRunner : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { QVERIFY(m_doc.load(sample("mixtral-8x7b-decode-hgx-h100.yaml"))); }

    void stepEmitsMetrics()
    {
        SimRunner runner;
        QSignalSpy spy(&runner, &SimRunner::metricsReady);
        runner.setScenario(m_doc.scenario(), m_doc.placement());
        QTRY_VERIFY_WITH_TIMEOUT(spy.count() >= 1, kWaitMs);
        MetricsPtr first = lastOf(spy);
        QVERIFY(first);
        QCOMPARE(first->step, 0);
        QCOMPARE(QString::fromStdString(first->source), QStringLiteral("sim"));
        QCOMPARE(runner.sourceName(), QStringLiteral("sim"));
        QVERIFY(first->summary.step_time_us > 0);
        QCOMPARE(static_cast<int>(first->gpus.size()), 8);
        runner.step();
        QTRY_VERIFY_WITH_TIMEOUT(spy.count() >= 2, kWaitMs);
        QCOMPARE(lastOf(spy)->step, 1);
    }

    // The coalescing rule, whatever the machine's speed: no two deliveries closer than the interval
    // (1 s / maxUpdatesPerSecond), step numbers only rise, and the newest step produced is always
    // delivered in the end (superseded steps are skipped, never the last one). Driven by signals:
    // it waits for a number of deliveries, not for a wall-clock quota.
    void coalescingRule()
    {
        SimRunner runner;
        QSignalSpy spy(&runner, &SimRunner::metricsReady);
        QElapsedTimer clock;
        clock.start();
        QList<qint64> at;
        connect(&runner, &SimRunner::metricsReady, this, [&] { at.append(clock.elapsed()); });
        runner.setScenario(m_doc.scenario(), m_doc.placement());
        QTRY_VERIFY_WITH_TIMEOUT(spy.count() >= 1, kWaitMs);
        runner.setMaxUpdatesPerSecond(30);
        runner.setStepsPerSecond(0);  // as fast as possible
        spy.clear();
        at.clear();
        runner.run();
        QTRY_VERIFY_WITH_TIMEOUT(spy.count() >= 8, 60000);
        runner.pause();
        // Whatever the worker had produced when it paused reaches the UI.
        QTRY_VERIFY_WITH_TIMEOUT(lastOf(spy) == runner.latest(), kWaitMs);
        const qint64 minGap = 1000 / 30 + 1;  // 34 ms, as SimRunner rounds it up
        int previousStep = -1;
        for (qsizetype i = 0; i < spy.count(); ++i) {
            const int step = spy.at(i).first().value<MetricsPtr>()->step;
            QVERIFY2(step > previousStep, qPrintable(QStringLiteral("delivery %1: step %2 after %3").arg(i).arg(step).arg(previousStep)));
            previousStep = step;
            // Millisecond clocks on both sides: allow the one-millisecond tick between them.
            if (i > 0)
                QVERIFY2(at[i] - at[i - 1] >= minGap - 1,
                         qPrintable(QStringLiteral("deliveries %1 and %2 only %3 ms apart").arg(i - 1).arg(i).arg(at[i] - at[i - 1])));
        }
    }

    // With a low rate the worker outruns the UI: steps are superseded, so step numbers jump, and
    // still at most one delivery per interval.
    void coalescingSkipsSupersededSteps()
    {
        SimRunner runner;
        QSignalSpy spy(&runner, &SimRunner::metricsReady);
        runner.setScenario(m_doc.scenario(), m_doc.placement());
        QTRY_VERIFY_WITH_TIMEOUT(spy.count() >= 1, kWaitMs);
        runner.setMaxUpdatesPerSecond(1);
        runner.setStepsPerSecond(0);
        spy.clear();
        runner.run();
        // The first delivery goes out at once; the next not before a second has passed. Wait until
        // the worker has produced two more steps (latest() follows every step the UI is told of,
        // delivered or held back).
        QTRY_VERIFY_WITH_TIMEOUT(spy.count() >= 1, kWaitMs);
        const int first = spy.at(0).first().value<MetricsPtr>()->step;
        QTRY_VERIFY_WITH_TIMEOUT(runner.latest()->step >= first + 2, 60000);
        if (spy.count() > 1)
            QSKIP("a step takes over half a second on this machine: the interval passed before two steps did");
        // Two steps are held behind one delivery: the next delivery skips at least one of them.
        QTRY_VERIFY_WITH_TIMEOUT(spy.count() >= 2, 5000);
        runner.pause();
        const int second = spy.at(1).first().value<MetricsPtr>()->step;
        QVERIFY2(second >= first + 2, qPrintable(QStringLiteral("steps %1 then %2: nothing superseded").arg(first).arg(second)));
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
        QTRY_VERIFY_WITH_TIMEOUT(spy.count() >= 3, kWaitMs);
        runner.pause();
        QVERIFY(!runner.isRunning());
        QCOMPARE(running.count(), 2);
        // A step in flight when the pause was queued still lands (the worker takes the pause after
        // it; with the coalescing timer, at most two deliveries). Wait until they have: a run
        // still going (50 steps/s, at most 30 deliveries/s) would deliver every 35 ms or so and
        // never go quiet for 150 ms, so more than two late deliveries is the failure.
        int late = 0;
        while (spy.wait(150))
            QVERIFY2(++late <= 2, "deliveries go on after pause()");
        QCOMPARE(lastOf(spy), runner.latest());
        // After them, no delivery: the spy's wait returns at once if the run went on and times
        // out only when the pause held.
        const int atPause = runner.latest()->step;
        const auto delivered = spy.count();
        QVERIFY(!spy.wait(300));
        QCOMPARE(runner.latest()->step, atPause);
        // One explicit step is the very next step and the only delivery.
        runner.step();
        QTRY_COMPARE_WITH_TIMEOUT(spy.count(), delivered + 1, kWaitMs);
        QCOMPARE(lastOf(spy)->step, atPause + 1);
        QVERIFY(!runner.isRunning());
        QCOMPARE(running.count(), 2);  // the explicit step did not start a run
    }

    // A run with nothing to step (no scenario yet) stops by itself, and the UI hears of it: the
    // Run button must not stay pressed on a runner that is not running.
    void runWithoutScenarioStopsAndSaysSo()
    {
        SimRunner runner;
        QSignalSpy running(&runner, &SimRunner::runningChanged);
        QSignalSpy spy(&runner, &SimRunner::metricsReady);
        runner.setStepsPerSecond(50);
        runner.run();
        QVERIFY(runner.isRunning());
        QTRY_COMPARE_WITH_TIMEOUT(running.count(), 2, kWaitMs);
        QCOMPARE(running.at(0).first().toBool(), true);
        QCOMPARE(running.at(1).first().toBool(), false);
        QVERIFY(!runner.isRunning());
        QCOMPARE(spy.count(), 0);
        // Once configured, a new run runs.
        runner.setScenario(m_doc.scenario(), m_doc.placement());
        runner.run();
        QTRY_VERIFY_WITH_TIMEOUT(spy.count() >= 2, kWaitMs);
        QVERIFY(runner.isRunning());
        runner.pause();
    }

    void resetRestartsAtStepZero()
    {
        SimRunner runner;
        QSignalSpy spy(&runner, &SimRunner::metricsReady);
        runner.setScenario(m_doc.scenario(), m_doc.placement());
        QTRY_VERIFY_WITH_TIMEOUT(spy.count() >= 1, kWaitMs);
        const MetricsPtr zero = lastOf(spy);
        for (int i = 1; i <= 3; ++i) {
            runner.step();
            QTRY_COMPARE_WITH_TIMEOUT(runner.latest()->step, i, kWaitMs);  // each step lands before the next is asked for
        }
        runner.reset();
        QTRY_COMPARE_WITH_TIMEOUT(runner.latest()->step, 0, kWaitMs);
        // Same seed, same first step.
        QCOMPARE(runner.latest()->summary.step_time_us, zero->summary.step_time_us);
    }

    // A reconfiguration that fails (here a placement for other GPUs) is reported, and the runner
    // goes on with the configuration it had: its steps are shown, not dropped as superseded.
    void failedReconfigureKeepsTheOldConfiguration()
    {
        SimRunner runner;
        QSignalSpy spy(&runner, &SimRunner::metricsReady);
        QSignalSpy failures(&runner, &SimRunner::errorOccurred);
        runner.setScenario(m_doc.scenario(), m_doc.placement());
        QTRY_VERIFY_WITH_TIMEOUT(spy.count() >= 1, kWaitMs);
        const MetricsPtr before = lastOf(spy);
        moex::Placement wrong = m_doc.placement();
        wrong.layers.pop_back();  // one MoE layer short: the simulator refuses it
        runner.setScenario(m_doc.scenario(), wrong);
        QTRY_COMPARE_WITH_TIMEOUT(failures.count(), 1, kWaitMs);
        runner.step();
        QTRY_VERIFY_WITH_TIMEOUT(lastOf(spy) != before, kWaitMs);
        QCOMPARE(lastOf(spy)->step, before->step + 1);
        QCOMPARE(lastOf(spy)->layers.size(), before->layers.size());
        QCOMPARE(runner.sourceName(), QStringLiteral("sim"));
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
        QString r = doc.moveExpert(MoeLayers::only(MoeLayerId(0)), ExpertId(hot), GpuId(from), GpuId(to));
        for (int k = 2; !r.isEmpty() && k < 72; ++k)
            r = doc.moveExpert(MoeLayers::only(MoeLayerId(0)), ExpertId(hot), GpuId(from), GpuId(to = (from + k) % 72));
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
