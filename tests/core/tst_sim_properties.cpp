// Physics properties of the step model that a wrong model would break (DESIGN.md section 5): more
// link capacity, faster NICs or NVLink, less load on the slowest GPU never slow a step; more tokens
// lengthen it, skew raises imbalance, a slower GPU never shortens it and the one with the largest
// load is the straggler; NVL72 beats 8 x HGX for DeepSeek decode. Each property is checked on the
// sample scenarios with --set-like overrides, reusing one routing sample (and, where the property
// is about a fixed placement, pinning the placement) across the variants of a comparison so that
// only the property under test changes.
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

class TestSimProperties : public QObject {
    Q_OBJECT
private slots:
    void moreLinkCapacityNeverSlowsAStep_data();
    void moreLinkCapacityNeverSlowsAStep();
    void fasterNicsOrNvlinkNeverSlowAStep_data();
    void fasterNicsOrNvlinkNeverSlowAStep();
    void movingLoadOffTheSlowestGpuNeverSlowsALayer_data();
    void movingLoadOffTheSlowestGpuNeverSlowsALayer();
    void nvl72BeatsHgxForDeepSeekDecode();
    void doublingTokensLengthensTheStep_data();
    void doublingTokensLengthensTheStep();
    void skewRaisesImbalance();
    void slowerGpuNeverShortensTheStep();
    void slowerGpuWithTheLargestLoadIsTheStraggler();
};

// --- more link capacity never slows a step -------------------------------------------------------

void TestSimProperties::moreLinkCapacityNeverSlowsAStep_data()
{
    QTest::addColumn<QString>("scenario");
    for (const char* s : {kNvlDecode, kHgxDecode, kNvlPrefill, kHgxPrefill})
        QTest::newRow(s) << QString::fromLatin1(s);
}

void TestSimProperties::moreLinkCapacityNeverSlowsAStep()
{
    QFETCH(QString, scenario);
    const Scenario base = load(scenario.toStdString());
    const RoutingSample r = sampleOf(base);
    const Placement p = placementFor(base, r);
    const Calibration cal = resolveCalibration(base);
    StepMetrics prev;
    StepMetrics first;
    bool havePrev = false;
    for (const double factor : {1.0, 1.25, 2.0, 4.0, 16.0}) {
        Scenario s = base;
        s.topology = scaledCapacity(base.topology, factor);
        const StepMetrics m = stepWith(s, r, p);
        if (havePrev) {
            const QByteArray what = scenario.toUtf8() + " at x" + QByteArray::number(factor);
            QVERIFY2(notAbove(m.summary.step_time_us, prev.summary.step_time_us), what.constData());
            QVERIFY2(notAbove(m.summary.dispatch_us, prev.summary.dispatch_us), what.constData());
            QVERIFY2(notAbove(m.summary.combine_us, prev.summary.combine_us), what.constData());
            QVERIFY2(notAbove(m.summary.moe_time_us, prev.summary.moe_time_us), what.constData());
            for (std::size_t l = 0; l < m.layers.size(); ++l) {
                QVERIFY2(notAbove(m.layers[l].dispatch_us, prev.layers[l].dispatch_us), what.constData());
                QVERIFY2(notAbove(m.layers[l].combine_us, prev.layers[l].combine_us), what.constData());
                QVERIFY2(notAbove(m.layers[l].time_us, prev.layers[l].time_us), what.constData());
            }
            // Capacity moves communication only; compute and attention stay as they were.
            QVERIFY(near(m.summary.expert_compute_us, prev.summary.expert_compute_us));
            QVERIFY(near(m.summary.attention_us, prev.summary.attention_us));
        } else {
            first = m;
        }
        prev = m;
        havePrev = true;
    }
    // Not vacuous: a phase that bandwidth (not the kernel's floor) set at x1 is shorter at x16.
    int bandwidthBound = 0;
    for (std::size_t l = 0; l < first.layers.size(); ++l) {
        if (first.layers[l].dispatch_us > 1.05 * cal.dispatch_floor_us) {
            ++bandwidthBound;
            QVERIFY(prev.layers[l].dispatch_us < first.layers[l].dispatch_us);
        }
        if (first.layers[l].combine_us > 1.05 * cal.combine_floor_us) {
            ++bandwidthBound;
            QVERIFY(prev.layers[l].combine_us < first.layers[l].combine_us);
        }
    }
    // Prefill (4096 tokens per GPU) and anything crossing NICs move enough bytes to be bandwidth-bound.
    if (base.workload.phase == Phase::prefill || base.topology.numDomains() > 1)
        QVERIFY2(bandwidthBound > 0, qPrintable(scenario));
}

// The same through the built-in topology's parameters: NIC and NVLink bandwidth per GPU, one at a time.
void TestSimProperties::fasterNicsOrNvlinkNeverSlowAStep_data()
{
    moreLinkCapacityNeverSlowsAStep_data();
}

void TestSimProperties::fasterNicsOrNvlinkNeverSlowAStep()
{
    QFETCH(QString, scenario);
    const Scenario base = load(scenario.toStdString());
    QVERIFY(!base.topology_params.builtin.empty());
    const RoutingSample r = sampleOf(base);
    const Placement p = placementFor(base, r);
    const Calibration cal = resolveCalibration(base);
    for (const bool nic : {true, false}) {
        StepMetrics first, prev;
        bool havePrev = false;
        for (const double gbs : nic ? std::vector<double>{12.5, 25, 50, 100, 400} : std::vector<double>{225, 450, 900, 1800, 3600}) {
            TopologyParams params = base.topology_params;
            (nic ? params.nic_gbs : params.nvlink_gbs) = gbs;
            Scenario s = base;
            s.topology = buildTopology(params);
            const StepMetrics m = stepWith(s, r, p);
            const QByteArray what = scenario.toUtf8() + (nic ? " nic " : " nvlink ") + QByteArray::number(gbs) + " GB/s";
            if (havePrev) {
                QVERIFY2(notAbove(m.summary.step_time_us, prev.summary.step_time_us), what.constData());
                QVERIFY2(notAbove(m.summary.dispatch_us, prev.summary.dispatch_us), what.constData());
                QVERIFY2(notAbove(m.summary.combine_us, prev.summary.combine_us), what.constData());
            } else {
                first = m;
            }
            prev = m;
            havePrev = true;
        }
        // NICs carry nothing inside one NVLink domain (NVL72): no change at all. Across domains
        // (8 x HGX) they bound the all-to-all, and NVLink bounds it inside one domain: there, a
        // layer whose combine bandwidth (not the floor) set at the slowest rate is faster at the fastest.
        const bool oneDomain = base.topology.numDomains() == 1;
        if (nic && oneDomain) {
            QCOMPARE(prev.summary.dispatch_us, first.summary.dispatch_us);
            QCOMPARE(prev.summary.combine_us, first.summary.combine_us);
        } else if (nic || oneDomain) {
            int bandwidthBound = 0;
            for (std::size_t l = 0; l < first.layers.size(); ++l)
                if (first.layers[l].combine_us > 1.05 * cal.combine_floor_us) {
                    ++bandwidthBound;
                    QVERIFY(prev.layers[l].combine_us < first.layers[l].combine_us);
                }
            QVERIFY2(bandwidthBound > 0, qPrintable(scenario + (nic ? QStringLiteral(" nic") : QStringLiteral(" nvlink"))));
        }
    }
}

// --- moving load off the slowest GPU never slows a layer -----------------------------------------
//
// What is guaranteed: moving expert e (one replica, n tokens) from GPU g to GPU h changes only
// those two GPUs' expert compute: g loses slot(n), h gains slot(n). If h's new compute does not
// exceed g's old one, the layer's slowest compute cannot rise. (Dispatch/combine may rise or fall:
// the token now travels to h. So the layer time is only guaranteed not to rise when neither
// communication phase got longer.) The setup (contiguous placement without redundant slots) gives
// every expert one replica and leaves GPUs 64-71 of NVL72 empty: the move target is an empty GPU,
// whose new compute, slot(n) + shared, is at most g's old compute, and the same holds for the half
// batches of two-batch overlap (slot(n/2) + shared(T/2) <= g's half) — the test checks the premise.

void TestSimProperties::movingLoadOffTheSlowestGpuNeverSlowsALayer_data()
{
    QTest::addColumn<QString>("scenario");
    QTest::addColumn<QString>("overlap");
    QTest::newRow("prefill, no overlap") << QString::fromLatin1(kNvlPrefill) << QStringLiteral("none");
    QTest::newRow("prefill, two-batch") << QString::fromLatin1(kNvlPrefill) << QStringLiteral("two-batch");
    QTest::newRow("decode, no overlap") << QString::fromLatin1(kNvlDecode) << QStringLiteral("none");
    QTest::newRow("decode, two-batch") << QString::fromLatin1(kNvlDecode) << QStringLiteral("two-batch");
}

void TestSimProperties::movingLoadOffTheSlowestGpuNeverSlowsALayer()
{
    QFETCH(QString, scenario);
    QFETCH(QString, overlap);
    const Scenario s = load(scenario.toStdString(), {{"placement.strategy", "contiguous"},
                                                     {"placement.redundant_slots", "0"},
                                                     {"overlap", overlap.toStdString()}});
    const RoutingSample r = sampleOf(s);
    const Placement before = placementFor(s, r);
    const int G = s.topology.numGpus();
    const int L = s.model.numMoeLayers();
    Simulator sim(s, before, resolveCalibration(s));
    StepMetrics a;
    sim.step(r, a);
    QVERIFY(!a.summary.memory_limited);
    const ComputeModel& cm = sim.computeModel();
    const double T = s.workload.tokens_per_gpu;
    const double shared = cm.sharedAndRouterUs(T);

    Placement after = before;
    std::vector<int> from(static_cast<std::size_t>(L)), to(static_cast<std::size_t>(L)), moved(static_cast<std::size_t>(L));
    for (int l = 0; l < L; ++l) {
        const LayerMetrics& lm = a.layers[static_cast<std::size_t>(l)];
        const LayerPlacement& lp = before.layers[static_cast<std::size_t>(l)];
        // The model as specified: each GPU's compute is the sum of its slots' rooflines plus the
        // shared experts and router and the activation kernel over its pairs, over its speed; the
        // layer waits for the slowest.
        double slowest = 0;
        std::vector<double> gpuUs(static_cast<std::size_t>(G), 0.0);
        for (int g = 0; g < G; ++g) {
            double us = 0, pairs = 0;
            for (const ExpertId e : lp.gpu_slots[static_cast<std::size_t>(g)]) {
                us += cm.expertSlotUs(static_cast<double>(lm.expert_load[static_cast<std::size_t>(e.value)]));
                pairs += static_cast<double>(lm.expert_load[static_cast<std::size_t>(e.value)]);
            }
            gpuUs[static_cast<std::size_t>(g)] = (us + shared + cm.activationUs(pairs)) / s.speeds.of(g);
            slowest = std::max(slowest, gpuUs[static_cast<std::size_t>(g)]);
        }
        QVERIFY2(near(slowest, lm.compute_us, 1e-6), qPrintable(QStringLiteral("layer %1: compute %2 vs %3")
                                                                    .arg(l).arg(lm.compute_us).arg(slowest)));
        const int g = lm.slowest_gpu;
        const int h = static_cast<int>(std::min_element(lm.gpu_load.begin(), lm.gpu_load.end()) - lm.gpu_load.begin());
        QVERIFY(g != h);
        // The heaviest expert of the slowest GPU moves to the least-loaded GPU.
        const auto& gslots = lp.gpu_slots[static_cast<std::size_t>(g)];
        std::size_t k = 0;
        for (std::size_t j = 1; j < gslots.size(); ++j)
            if (lm.expert_load[static_cast<std::size_t>(gslots[j].value)] > lm.expert_load[static_cast<std::size_t>(gslots[k].value)])
                k = j;
        const int e = gslots[k].value;
        const double n = static_cast<double>(lm.expert_load[static_cast<std::size_t>(e)]);
        // The premise: the receiving GPU holds nothing and does not become slower than the slowest was.
        QVERIFY(lp.gpu_slots[static_cast<std::size_t>(h)].empty());
        QVERIFY(gpuUs[static_cast<std::size_t>(h)] + (cm.expertSlotUs(n) + cm.activationUs(n)) / s.speeds.of(h) <= lm.compute_us);
        auto& gs = after.layers[static_cast<std::size_t>(l)].gpu_slots;
        gs[static_cast<std::size_t>(g)].erase(gs[static_cast<std::size_t>(g)].begin() + static_cast<std::ptrdiff_t>(k));
        gs[static_cast<std::size_t>(h)].push_back(ExpertId(e));
        from[static_cast<std::size_t>(l)] = g;
        to[static_cast<std::size_t>(l)] = h;
        moved[static_cast<std::size_t>(l)] = e;
    }
    sim.setPlacement(after);
    StepMetrics b;
    sim.step(r, b);
    int commNotLonger = 0;
    for (int l = 0; l < L; ++l) {
        const LayerMetrics& x = a.layers[static_cast<std::size_t>(l)];
        const LayerMetrics& y = b.layers[static_cast<std::size_t>(l)];
        const QByteArray where = "layer " + QByteArray::number(l);
        const std::int64_t n = x.expert_load[static_cast<std::size_t>(moved[static_cast<std::size_t>(l)])];
        QCOMPARE(y.expert_load, x.expert_load);  // routing is the same
        QCOMPARE(y.gpu_load[static_cast<std::size_t>(from[static_cast<std::size_t>(l)])],
                 x.gpu_load[static_cast<std::size_t>(from[static_cast<std::size_t>(l)])] - n);
        QCOMPARE(y.gpu_load[static_cast<std::size_t>(to[static_cast<std::size_t>(l)])],
                 x.gpu_load[static_cast<std::size_t>(to[static_cast<std::size_t>(l)])] + n);
        QVERIFY2(notAbove(y.compute_us, x.compute_us), where.constData());
        QVERIFY2(notAbove(y.imbalance, x.imbalance), where.constData());
        if (notAbove(y.dispatch_us, x.dispatch_us) && notAbove(y.combine_us, x.combine_us)) {
            ++commNotLonger;
            QVERIFY2(notAbove(y.time_us, x.time_us), where.constData());
        }
    }
    qInfo("%s, %s: %d of %d layers with communication not longer after the move", qPrintable(scenario),
          qPrintable(overlap), commNotLonger, L);
    QVERIFY(notAbove(b.summary.expert_compute_us, a.summary.expert_compute_us));
}

// --- NVL72 vs 8 x HGX-H200 for DeepSeek-R1 decode ------------------------------------------------

void TestSimProperties::nvl72BeatsHgxForDeepSeekDecode()
{
    const Scenario nvl = load(kNvlDecode);
    const Scenario hgx = load(kHgxDecode);
    QCOMPARE(nvl.topology.numGpus(), 72);
    QCOMPARE(hgx.topology.numGpus(), 64);
    QCOMPARE(nvl.workload.tokens_per_gpu, 128);
    QCOMPARE(hgx.workload.tokens_per_gpu, 128);

    const RoutingSample rn = sampleOf(nvl);
    const RoutingSample rh = sampleOf(hgx);
    Simulator simN(nvl, placementFor(nvl, rn), resolveCalibration(nvl));
    Simulator simH(hgx, placementFor(hgx, rh), resolveCalibration(hgx));
    StepMetrics n, h;
    simN.step(rn, n);
    simH.step(rh, h);
    QVERIFY(!n.summary.memory_limited && !h.summary.memory_limited);
    QVERIFY2(n.summary.tokens_per_s_per_gpu > h.summary.tokens_per_s_per_gpu,
             qPrintable(QStringLiteral("NVL72 %1 vs HGX %2 tokens/s per GPU")
                            .arg(n.summary.tokens_per_s_per_gpu)
                            .arg(h.summary.tokens_per_s_per_gpu)));
    QVERIFY(n.summary.dispatch_us < h.summary.dispatch_us);
    QVERIFY(n.summary.combine_us < h.summary.combine_us);

    // HGX: 7 of 8 destinations are in other nodes, so the dispatch leaves over the NICs.
    QVERIFY(simH.kernelMode() == KernelMode::low_latency);
    QVERIFY(portBytes(simH, PortKind::nicOut) > 0);
    QVERIFY(portBytes(simH, PortKind::nicIn) > 0);
    QVERIFY(portBytes(simH, PortKind::nicOut) > portBytes(simH, PortKind::nvOut));
    // NVL72: one NVLink domain, no byte touches a NIC.
    QCOMPARE(simN.fabric().numDomains(), 1);
    QCOMPARE(portBytes(simN, PortKind::nicOut), 0.0);
    QCOMPARE(portBytes(simN, PortKind::nicIn), 0.0);
    QVERIFY(portBytes(simN, PortKind::nvOut) > 0);
    // The link view agrees: HGX links carrying traffic include network links, NVL72's do not.
    auto carries = [](const Scenario& s, const StepMetrics& m, LinkKind kind) {
        for (const LinkMetrics& l : m.links) {
            for (const TopoLink& t : s.topology.links())
                if (static_cast<int>(t.from.index()) == l.from && static_cast<int>(t.to.index()) == l.to && t.kind == kind
                    && l.bytes > 0)
                    return true;
        }
        return false;
    };
    QVERIFY(carries(hgx, h, LinkKind::network));
    QVERIFY(!carries(nvl, n, LinkKind::network));
}

// --- doubling tokens lengthens the step ------------------------------------------------------------

void TestSimProperties::doublingTokensLengthensTheStep_data()
{
    QTest::addColumn<QString>("scenario");
    QTest::addColumn<int>("tokens");  // the first of three doublings
    QTest::newRow("nvl72 decode") << QString::fromLatin1(kNvlDecode) << 64;
    QTest::newRow("hgx decode") << QString::fromLatin1(kHgxDecode) << 64;
    QTest::newRow("nvl72 prefill") << QString::fromLatin1(kNvlPrefill) << 1024;
    QTest::newRow("hgx prefill") << QString::fromLatin1(kHgxPrefill) << 1024;
    QTest::newRow("mixtral decode") << QString::fromLatin1(kMixtral) << 16;
}

void TestSimProperties::doublingTokensLengthensTheStep()
{
    QFETCH(QString, scenario);
    QFETCH(int, tokens);
    double prevStep = 0, prevMoe = 0;
    for (int t = tokens; t <= 4 * tokens; t *= 2) {
        const Scenario s = load(scenario.toStdString(), {{"workload.tokens_per_gpu", std::to_string(t)}});
        const StepMetrics m = stepOf(s);
        QVERIFY(!m.summary.memory_limited);
        QCOMPARE(m.summary.batch_per_gpu, static_cast<std::int64_t>(t));
        QVERIFY2(m.summary.step_time_us > prevStep,
                 qPrintable(QStringLiteral("%1 tokens: %2 us after %3 us").arg(t).arg(m.summary.step_time_us).arg(prevStep)));
        QVERIFY(m.summary.moe_time_us > prevMoe);
        prevStep = m.summary.step_time_us;
        prevMoe = m.summary.moe_time_us;
    }
}

// --- skewed routing raises the imbalance ------------------------------------------------------------

void TestSimProperties::skewRaisesImbalance()
{
    for (const char* name : {kNvlDecode, kMixtral}) {
        double imbalance[2] = {0, 0};
        double maxExpert[2] = {0, 0};
        for (int i = 0; i < 2; ++i) {
            // A fixed placement: a load-aware one (eplb) would rebalance the skew away.
            const Scenario s = load(name, {{"workload.routing.skew", i == 0 ? "0" : "0.8"},
                                           {"workload.routing.seed", "3"},
                                           {"placement.strategy", "contiguous"}});
            auto source = makeRoutingSource(s);
            Simulator sim(s, resolvePlacement(s), resolveCalibration(s));
            RoutingSample r;
            StepMetrics m;
            constexpr int kSteps = 2;
            for (int k = 0; k < kSteps; ++k) {
                source->next(r);
                sim.step(r, m);
                imbalance[i] += m.summary.imbalance / kSteps;
                for (const LayerMetrics& l : m.layers)
                    maxExpert[i] += static_cast<double>(*std::max_element(l.expert_load.begin(), l.expert_load.end()));
            }
        }
        QVERIFY2(imbalance[1] > imbalance[0],
                 qPrintable(QStringLiteral("%1: imbalance %2 (skew 0.8) vs %3 (skew 0)").arg(QString::fromLatin1(name))
                                .arg(imbalance[1]).arg(imbalance[0])));
        QVERIFY(imbalance[0] >= 1.0);
        QVERIFY(maxExpert[1] > maxExpert[0]);
    }
}

// --- slower GPUs -------------------------------------------------------------------------------------
//
// Slowing GPU N by 0.8 changes only N's times (compute, attention) on the same routing: every
// layer's slowest compute is either unchanged (another GPU stays slowest) or N's, which can only
// have grown; a layer N led before it still leads, at exactly 1/0.8 the time.

void TestSimProperties::slowerGpuNeverShortensTheStep()
{
    const Scenario base = load(kNvlDecode);
    const RoutingSample r = sampleOf(base);
    const StepMetrics a = stepOf(base, r);
    // Slow down the GPU that most often leads, so both cases below occur.
    const int N = a.summary.straggler_gpu;
    const auto n = static_cast<std::size_t>(N);
    const Scenario slow = load(kNvlDecode, {{"gpus.speed.gpu" + std::to_string(N), "0.8"}});
    QCOMPARE(slow.speeds.of(N), 0.8);
    const StepMetrics b = stepOf(slow, r);
    QVERIFY(b.summary.step_time_us > a.summary.step_time_us);
    QVERIFY(notAbove(a.summary.expert_compute_us, b.summary.expert_compute_us));
    QCOMPARE(b.gpus[n].speed, 0.8);
    QCOMPARE(b.summary.straggler_gpu, N);
    int led = 0;
    for (std::size_t l = 0; l < a.layers.size(); ++l) {
        const LayerMetrics& x = a.layers[l];
        const LayerMetrics& y = b.layers[l];
        const QByteArray where = "layer " + QByteArray::number(static_cast<int>(l));
        QVERIFY2(notAbove(x.compute_us, y.compute_us), where.constData());
        QVERIFY2(notAbove(x.time_us, y.time_us), where.constData());
        if (x.slowest_gpu == N) {
            ++led;
            QCOMPARE(y.slowest_gpu, N);
            QVERIFY2(near(y.compute_us, x.compute_us / 0.8), where.constData());
        } else if (y.slowest_gpu != N) {
            QVERIFY2(near(y.compute_us, x.compute_us), where.constData());
        }
    }
    // N's own compute over the step is exactly 1/0.8 of what it was.
    QVERIFY(near(b.gpus[n].compute_us, a.gpus[n].compute_us / 0.8));
    QVERIFY(near(b.gpus[n].attention_us, a.gpus[n].attention_us / 0.8));
    QVERIFY(led > 0);
}

// With one expert per GPU (Mixtral on 8 GPUs) a GPU's expert compute grows with its load, so a
// slowed GPU that carries the largest load of a layer is that layer's straggler.
void TestSimProperties::slowerGpuWithTheLargestLoadIsTheStraggler()
{
    const Scenario base = load(kMixtral);
    const RoutingSample r = sampleOf(base);
    for (const auto& layer : placementFor(base, r).layers)  // the premise: one expert per GPU
        for (const auto& gs : layer.gpu_slots)
            QCOMPARE(static_cast<int>(gs.size()), 1);
    const StepMetrics a = stepOf(base, r);
    int checked = 0;
    for (int n = 0; n < base.topology.numGpus(); ++n) {
        const Scenario slow = load(kMixtral, {{"gpus.speed.gpu" + std::to_string(n), "0.8"}});
        const StepMetrics b = stepOf(slow, r);
        QVERIFY(b.summary.step_time_us > a.summary.step_time_us);
        for (std::size_t l = 0; l < b.layers.size(); ++l) {
            const auto& gl = b.layers[l].gpu_load;
            if (gl[static_cast<std::size_t>(n)] < *std::max_element(gl.begin(), gl.end()))
                continue;
            ++checked;
            QVERIFY2(b.layers[l].slowest_gpu == n,
                     qPrintable(QStringLiteral("gpu%1 at 0.8 with the largest load of layer %2: slowest is gpu%3")
                                    .arg(n).arg(l).arg(b.layers[l].slowest_gpu)));
        }
        int led = 0;
        for (const auto& l : b.layers)
            led += l.slowest_gpu == n;
        if (2 * led > static_cast<int>(b.layers.size()))
            QCOMPARE(b.summary.straggler_gpu, n);
    }
    QVERIFY(checked >= static_cast<int>(a.layers.size()));  // every layer has a largest load
}

QTEST_APPLESS_MAIN(TestSimProperties)
#include "tst_sim_properties.moc"
