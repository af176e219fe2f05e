// The analytical step model as a run uses it (DESIGN.md section 5, issue 3 items 4 and 6): a placement
// judged on the steps after its history, determinism per seed, replay of the fresh sequence, rates
// and power from the step's time, no allocation per step after warm-up, and the fidelity target.
// Physics properties are tst_sim_properties; communication tst_sim_comm; compute and memory
// tst_sim_memory.
#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "metrics/step_metrics.h"
#include "model/dtype.h"
#include "placement/placement.h"
#include "scenario/scenario_yaml.h"
#include "sim/calibration.h"
#include "sim/compute_model.h"
#include "sim/fabric.h"
#include "sim/fidelity.h"
#include "sim/scenario_run.h"
#include "sim/simulator.h"
#include "topology/builtin_topologies.h"
#include "topology/topology.h"
#include "workload/routing_sample.h"
#endif

#include "alloc_hook.h"
#include "metrics/metrics_json.h"
#include "sim_fixtures.h"

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>

using namespace moex;
using namespace moex::test;
namespace fs = std::filesystem;

class TestSim : public QObject {
    Q_OBJECT
private slots:
    void placementIsJudgedOnLaterSteps_data();
    void placementIsJudgedOnLaterSteps();
    void meanTotalsDerivesRatesFromTime();
    void powerWeighsCommunicationByTheCalibration();
    void stepAllocatesNothingAfterWarmUp_data();
    void stepAllocatesNothingAfterWarmUp();
    void placementAndRoutingReplayTheFreshSequence();
    void deterministicPerSeed();
    void fidelityWithinTarget();
};

// --- a placement is judged on the steps after its history -------------------------------------------

// DESIGN: a placement is fitted to past routing and judged on the steps after it (issue 20 item 6):
// the load comes from the source's first placement.load_steps steps (8 unless the scenario says),
// a run starts right after them, and a reset returns there exactly, however far the run went.
void TestSim::placementIsJudgedOnLaterSteps_data()
{
    QTest::addColumn<int>("loadSteps");
    QTest::newRow("default") << 0;
    QTest::newRow("placement.load_steps 3") << 3;
}

void TestSim::placementIsJudgedOnLaterSteps()
{
    QFETCH(int, loadSteps);
    const Scenario s = loadSteps > 0 ? load(kMixtral, {{"placement.load_steps", std::to_string(loadSteps)}}) : load(kMixtral);
    const int n = s.placement.load_steps;
    QCOMPARE(n, loadSteps > 0 ? loadSteps : kDefaultLoadSteps);
    auto fresh = makeRoutingSource(s);
    QCOMPARE(fresh->loadSteps(), n);
    std::vector<RoutingSample> steps(static_cast<std::size_t>(n) + 12);
    for (auto& r : steps)
        fresh->next(r);
    auto expertsOf = [](const RoutingSample& r) {
        const auto e = r.expertLoad(0);
        return std::vector<double>(e.begin(), e.end());
    };

    PlacementAndRouting placed = resolvePlacementAndRouting(s);
    std::vector<std::vector<double>> history;
    for (int i = 0; i < n; ++i)
        history.push_back(expertsOf(steps[static_cast<std::size_t>(i)]));
    // The placement is eplb's on the first n steps only.
    QVERIFY(placed.placement == resolvePlacement(s, estimateLoad(*makeRoutingSource(s), n)));
    RoutingSample r;
    startRunWindow(*placed.routing);
    for (int i = n; i < n + 12; ++i) {
        placed.routing->next(r);
        QCOMPARE(expertsOf(r), expertsOf(steps[static_cast<std::size_t>(i)]));
        for (const auto& past : history)
            QVERIFY(expertsOf(r) != past);  // never one of the steps it was fitted to
    }
    startRunWindow(*placed.routing);  // after 12 steps past the kept ones
    placed.routing->next(r);
    QCOMPARE(expertsOf(r), expertsOf(steps[static_cast<std::size_t>(n)]));
    placed.routing->next(r);
    QCOMPARE(expertsOf(r), expertsOf(steps[static_cast<std::size_t>(n) + 1]));
}

// Two steps of 1 ms and 3 ms, each of 1000 tokens: 2000 tokens in 4 ms is 500,000 tokens/s (the
// mean of the two rates, 666,667, would credit the fast step with the slow one's time); power is
// time-weighted, (2 kW x 1 ms + 1 kW x 3 ms) / 4 ms = 1.25 kW, and tokens/s per kW their quotient.
void TestSim::meanTotalsDerivesRatesFromTime()
{
    StepTotals fast, slow;
    fast.step_time_us = 1000;
    fast.tokens_per_s = 1e6;
    fast.tokens_per_s_per_gpu = 1e6 / 8;
    fast.power_kw = 2;
    fast.tokens_per_s_per_kw = 5e5;
    slow.step_time_us = 3000;
    slow.tokens_per_s = 1e6 / 3;
    slow.tokens_per_s_per_gpu = 1e6 / 24;
    slow.power_kw = 1;
    slow.tokens_per_s_per_kw = 1e6 / 3;
    const StepTotals m = meanTotals({fast, slow});
    QCOMPARE(m.step_time_us, 2000.0);
    QVERIFY(qFuzzyCompare(m.tokens_per_s, 5e5));
    QVERIFY(qFuzzyCompare(m.tokens_per_s_per_gpu, 5e5 / 8));
    QVERIFY(qFuzzyCompare(m.power_kw, 1.25));
    QVERIFY(qFuzzyCompare(m.tokens_per_s_per_kw, 4e5));
    // The summary's rate is the tokens of a step over the mean step time.
    QVERIFY(qFuzzyCompare(m.tokens_per_s, 1000.0 / (m.step_time_us * 1e-6)));
}

// Power per GPU is idle + (TDP - idle) x utilisation, the utilisation counting dispatch and
// combine time with the calibration's power_comm_weight: written out from the GPU's own times.
void TestSim::powerWeighsCommunicationByTheCalibration()
{
    const Scenario s = load(kHgxDecode);
    const RoutingSample r = sampleOf(s);
    const Placement p = placementFor(s, r);
    for (const double weight : {0.0, 0.3, 1.0}) {
        Calibration cal = resolveCalibration(s);
        cal.power_comm_weight = weight;
        Simulator sim(s, p, cal);
        StepMetrics m;
        sim.step(r, m);
        double total = s.topology.switch_power_w;
        for (const GpuMetrics& g : m.gpus) {
            const double util = std::min(1.0, (g.compute_us + g.attention_us + weight * (g.dispatch_us + g.combine_us))
                                                  / m.summary.step_time_us);
            QVERIFY(near(g.power_w, s.topology.gpu.idle_w + (s.topology.gpu.tdp_w - s.topology.gpu.idle_w) * util, 1e-12));
            total += g.power_w;
        }
        QVERIFY(near(m.summary.power_kw, total / 1e3, 1e-12));
        QVERIFY(m.gpus[0].dispatch_us + m.gpus[0].combine_us > 0);  // the weight matters here
    }
}

// A step after the first (which sizes the outputs) allocates nothing, whatever the kernels and the
// overlap: the simulator's own buffers and the metrics are reused (moved here from moex-cli bench
// sim, whose process-wide operator new counted it).
void TestSim::stepAllocatesNothingAfterWarmUp_data()
{
    QTest::addColumn<QString>("scenario");
    QTest::addColumn<QString>("key");
    QTest::addColumn<QString>("value");
    QTest::newRow("NVL72 decode") << QString::fromLatin1(kNvlDecode) << QString() << QString();
    QTest::newRow("NVL72 decode, one-sided") << QString::fromLatin1(kNvlDecode) << QStringLiteral("a2a_kernel") << QStringLiteral("one-sided");
    QTest::newRow("NVL72 decode, no overlap") << QString::fromLatin1(kNvlDecode) << QStringLiteral("overlap") << QStringLiteral("none");
    QTest::newRow("8 x HGX-H200 decode") << QString::fromLatin1(kHgxDecode) << QString() << QString();
    QTest::newRow("8 x HGX-H200 prefill") << QString::fromLatin1(kHgxPrefill) << QString() << QString();
    QTest::newRow("NVL72 prefill") << QString::fromLatin1(kNvlPrefill) << QString() << QString();
}

void TestSim::stepAllocatesNothingAfterWarmUp()
{
    QFETCH(QString, scenario);
    QFETCH(QString, key);
    QFETCH(QString, value);
    Overrides overrides;
    if (!key.isEmpty())
        overrides.push_back({key.toStdString(), value.toStdString()});
    const Scenario s = load(scenario.toStdString(), overrides);
    auto source = makeRoutingSource(s);
    RoutingSample a, b;
    source->next(a);
    source->next(b);
    Simulator sim(s, placementFor(s, a), resolveCalibration(s));
    StepMetrics m;
    sim.step(a, m);  // sizes every output
    test::startCountingAllocations();
    sim.step(b, m);
    sim.step(a, m);
    (void)sim.layerTimeUs(b, 0);
    QCOMPARE(test::stopCountingAllocations(), 0L);
    QVERIFY(m.summary.step_time_us > 0);
}

// --- determinism ------------------------------------------------------------------------------------

void TestSim::placementAndRoutingReplayTheFreshSequence()
{
    // simulate's shortcut (the run replays the steps the eplb load was estimated from) changes
    // nothing: the same placement as resolvePlacement, the same steps as a fresh routing source,
    // before and after a reset, past the kept steps.
    const Scenario s = load(kNvlDecode);
    const PlacementAndRouting placed = resolvePlacementAndRouting(s);
    const Placement direct = resolvePlacement(s);
    QCOMPARE(placed.placement.layers.size(), direct.layers.size());
    QVERIFY(placed.placement == direct);
    auto fresh = makeRoutingSource(s);
    RoutingSample a, b;
    for (int pass = 0; pass < 2; ++pass) {
        placed.routing->reset();
        fresh->reset();
        for (int step = 0; step < s.placement.load_steps + 3; ++step) {
            placed.routing->next(a);
            fresh->next(b);
            QVERIFY2(a.all_counts == b.all_counts, qPrintable(QStringLiteral("pass %1 step %2").arg(pass).arg(step)));
        }
    }
}

void TestSim::deterministicPerSeed()
{
    const Scenario s = load(kNvlDecode);
    auto run = [&](long long seed) {
        auto source = makeRoutingSource(s, seed);
        RoutingSample r;
        source->next(r);
        Simulator sim(s, placementFor(s, r), resolveCalibration(s));
        std::vector<StepMetrics> out(2);
        for (auto& m : out) {
            sim.step(r, m);
            source->next(r);
        }
        return out;
    };
    const auto a = run(7), b = run(7), c = run(8);
    for (std::size_t k = 0; k < a.size(); ++k) {
        const StepTotals& x = a[k].summary;
        const StepTotals& y = b[k].summary;
        QCOMPARE(y.step_time_us, x.step_time_us);
        QCOMPARE(y.tokens_per_s, x.tokens_per_s);
        QCOMPARE(y.tokens_per_s_per_kw, x.tokens_per_s_per_kw);
        QCOMPARE(y.imbalance, x.imbalance);
        QCOMPARE(y.dispatch_us, x.dispatch_us);
        QCOMPARE(y.combine_us, x.combine_us);
        QCOMPARE(y.expert_compute_us, x.expert_compute_us);
        QCOMPARE(y.attention_us, x.attention_us);
        QCOMPARE(y.hbm_used_gb_max, x.hbm_used_gb_max);
        QCOMPARE(y.max_concurrent_users, x.max_concurrent_users);
        QCOMPARE(y.power_kw, x.power_kw);
        QCOMPARE(y.straggler_gpu, x.straggler_gpu);
        QCOMPARE(b[k].traffic, a[k].traffic);
        for (std::size_t l = 0; l < a[k].layers.size(); ++l) {
            QCOMPARE(b[k].layers[l].expert_load, a[k].layers[l].expert_load);
            QCOMPARE(b[k].layers[l].gpu_load, a[k].layers[l].gpu_load);
        }
    }
    bool differs = false;
    for (std::size_t l = 0; l < a[0].layers.size(); ++l)
        differs = differs || c[0].layers[l].expert_load != a[0].layers[l].expert_load;
    QVERIFY(differs);
    // The sample's own seed is 7: no override gives the same routing as --seed 7.
    const RoutingSample plain = sampleOf(s);
    const RoutingSample seven = sampleOf(s, 7);
    QVERIFY(plain.all_counts == seven.all_counts);
}

// --- fidelity (issue 3 item 4) ---------------------------------------------------------------------------

void TestSim::fidelityWithinTarget()
{
    const auto points = runFidelity();
    QVERIFY(points.size() >= 15);
    for (const FidelityPoint& p : points) {
        QVERIFY(p.measured > 0);
        QVERIFY(p.predicted > 0 && std::isfinite(p.predicted));
        QVERIFY(p.unit == "GB/s" || p.unit == "us");
        QVERIFY2(std::abs(p.error()) <= 0.25,
                 qPrintable(QStringLiteral("%1: measured %2, predicted %3 %4 (%5%)")
                                .arg(QString::fromStdString(p.name)).arg(p.measured).arg(p.predicted)
                                .arg(QString::fromStdString(p.unit)).arg(100 * p.error(), 0, 'f', 1)));
    }
}

QTEST_APPLESS_MAIN(TestSim)
#include "tst_sim.moc"
