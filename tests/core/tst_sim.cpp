// The analytical step model (DESIGN.md section 5, issue 3 items 4 and 6): physics properties that a
// wrong model would break, conservation of token-expert pairs, consistency of the link view with
// the fabric's ports and the traffic matrix, memory bookkeeping, determinism, and the fidelity
// target. Each property is checked on the sample scenarios with --set-like overrides, reusing one
// routing sample (and, where the property is about a fixed placement, pinning the placement) across
// the variants of a comparison so that only the property under test changes.
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

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>

using namespace moex;
namespace fs = std::filesystem;

namespace {

const std::string kScenarios = std::string(MOEX_SOURCE_DIR) + "/samples/scenarios/";

const char* const kNvlDecode = "deepseek-r1-decode-nvl72";
const char* const kHgxDecode = "deepseek-r1-decode-hgx-h200x8";
const char* const kNvlPrefill = "deepseek-r1-prefill-nvl72";
const char* const kHgxPrefill = "deepseek-r1-prefill-hgx-h200x8";
const char* const kMixtral = "mixtral-8x7b-decode-hgx-h100";

Scenario load(const std::string& name, const Overrides& overrides = {})
{
    return loadScenarioFile(kScenarios + name + ".yaml", overrides);
}

RoutingSample sampleOf(const Scenario& s, long long seed = -1)
{
    auto source = makeRoutingSource(s, seed);
    RoutingSample r;
    source->next(r);
    return r;
}

// Per-layer expert load of one routing sample ([layer][expert]).
std::vector<std::vector<double>> loadOf(const RoutingSample& r)
{
    std::vector<std::vector<double>> out;
    for (int l = 0; l < r.numLayers(); ++l) {
        const auto perExpert = r.expertLoad(l);
        out.emplace_back(perExpert.begin(), perExpert.end());
    }
    return out;
}

// The scenario's placement strategy fitted to the load of `r` (resolvePlacement without `load`
// would estimate it from 8 fresh routing steps: slow for prefill, and no more realistic).
Placement placementFor(const Scenario& s, const RoutingSample& r)
{
    return resolvePlacement(s, loadOf(r));
}

StepMetrics stepWith(const Scenario& s, const RoutingSample& r, const Placement& p)
{
    Simulator sim(s, p, resolveCalibration(s));
    StepMetrics m;
    sim.step(r, m);
    return m;
}

StepMetrics stepOf(const Scenario& s, const RoutingSample& r)
{
    return stepWith(s, r, placementFor(s, r));
}

StepMetrics stepOf(const Scenario& s)
{
    return stepOf(s, sampleOf(s));
}

// `a` <= `b` up to rounding of sums of doubles.
bool notAbove(double a, double b)
{
    return a <= b + 1e-9 * std::max(1.0, std::abs(b));
}

bool near(double a, double b, double rel = 1e-9)
{
    return std::abs(a - b) <= rel * std::max({1.0, std::abs(a), std::abs(b)});
}

// A copy of `t` with every link's capacity multiplied by `factor` (nodes, latencies, GPU spec kept).
Topology scaledCapacity(const Topology& t, double factor)
{
    Topology out;
    out.name = t.name;
    out.builtin = t.builtin;
    out.gpu = t.gpu;
    out.pxn = t.pxn;
    out.switch_power_w = t.switch_power_w;
    for (const TopoNode& n : t.nodes())
        out.addNode(n);
    for (TopoLink l : t.links()) {
        l.capacity_gbs *= factor;
        out.addLink(l);
    }
    out.finalize();
    return out;
}

std::int64_t sum(const std::vector<std::int64_t>& v)
{
    return std::accumulate(v.begin(), v.end(), std::int64_t{0});
}

int slotsOn(const Placement& p, int gpu)
{
    int n = 0;
    for (const auto& l : p.layers)
        n += static_cast<int>(l.gpu_slots[static_cast<std::size_t>(gpu)].size());
    return n;
}

double portBytes(const Simulator& sim, PortKind kind)
{
    double total = 0;
    const auto& ports = sim.fabric().ports();
    for (std::size_t p = 0; p < ports.size(); ++p)
        if (ports[p].kind == kind)
            total += sim.lastDispatchPortBytes()[p];
    return total;
}

// Explicit replica shares for every expert of every layer: 1/4 and 3/4 for two replicas, even
// otherwise (binary fractions, so they sum to exactly 1).
Placement withShares(Placement p)
{
    for (auto& layer : p.layers) {
        const auto counts = layer.replicaCounts(p.num_experts);
        std::vector<int> seen(counts.size(), 0);
        layer.shares.assign(layer.gpu_slots.size(), {});
        for (std::size_t g = 0; g < layer.gpu_slots.size(); ++g)
            for (const ExpertId e : layer.gpu_slots[g]) {
                const auto k = static_cast<std::size_t>(e.value);
                const int n = counts[k];
                const double share = n == 2 ? (seen[k] == 0 ? 0.25 : 0.75) : 1.0 / n;
                ++seen[k];
                layer.shares[g].push_back(share);
            }
    }
    return p;
}

}  // namespace

class TestSim : public QObject {
    Q_OBJECT
private slots:
    void placementIsJudgedOnLaterSteps_data();
    void placementIsJudgedOnLaterSteps();
    void moreLinkCapacityNeverSlowsAStep_data();
    void moreLinkCapacityNeverSlowsAStep();
    void fasterNicsOrNvlinkNeverSlowAStep_data();
    void fasterNicsOrNvlinkNeverSlowAStep();
    void movingLoadOffTheSlowestGpuNeverSlowsALayer_data();
    void movingLoadOffTheSlowestGpuNeverSlowsALayer();
    void nvl72BeatsHgxForDeepSeekDecode();
    void weightFormatsHaveTheirBytesPerParameter();
    void expertComputeIsARooflineWithTiles();
    void doublingTokensLengthensTheStep_data();
    void doublingTokensLengthensTheStep();
    void skewRaisesImbalance();
    void tokenExpertPairsAreConserved_data();
    void tokenExpertPairsAreConserved();
    void replicasOnTheSameGpuOrDomainServeFirst();
    void slowerGpuNeverShortensTheStep();
    void slowerGpuWithTheLargestLoadIsTheStraggler();
    void twoBatchOverlap();
    void balancedFloorSpreadsEachLayersExpertWork();
    void redundantSlotsCostMemory();
    void memoryLimitsTheBatch();
    void noKvCacheMeansNoMemoryBoundOnTheBatch();
    void idleTimeIsTheStepMinusEachGpusOwnWork();
    void pcieEfficiencyBoundsNicPorts();
    void deterministicPerSeed();
    void placementAndRoutingReplayTheFreshSequence();
    void nvlinkFastPathMatchesGeneralPath_data();
    void nvlinkFastPathMatchesGeneralPath();
    void allToAllRespectsLineRate_data();
    void allToAllRespectsLineRate();
    void linksAgreeWithPortsAndTraffic_data();
    void linksAgreeWithPortsAndTraffic();
    void fidelityWithinTarget();
    void lowLatencyKernelsCountPairsOrGpus();
    void twoBatchOverlapStageByStage();
    void meanTotalsDerivesRatesFromTime();
    void powerWeighsCommunicationByTheCalibration();
    void stepAllocatesNothingAfterWarmUp_data();
    void stepAllocatesNothingAfterWarmUp();
};

// --- more link capacity never slows a step -------------------------------------------------------

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

void TestSim::moreLinkCapacityNeverSlowsAStep_data()
{
    QTest::addColumn<QString>("scenario");
    for (const char* s : {kNvlDecode, kHgxDecode, kNvlPrefill, kHgxPrefill})
        QTest::newRow(s) << QString::fromLatin1(s);
}

void TestSim::moreLinkCapacityNeverSlowsAStep()
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
void TestSim::fasterNicsOrNvlinkNeverSlowAStep_data()
{
    moreLinkCapacityNeverSlowsAStep_data();
}

void TestSim::fasterNicsOrNvlinkNeverSlowAStep()
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

void TestSim::movingLoadOffTheSlowestGpuNeverSlowsALayer_data()
{
    QTest::addColumn<QString>("scenario");
    QTest::addColumn<QString>("overlap");
    QTest::newRow("prefill, no overlap") << QString::fromLatin1(kNvlPrefill) << QStringLiteral("none");
    QTest::newRow("prefill, two-batch") << QString::fromLatin1(kNvlPrefill) << QStringLiteral("two-batch");
    QTest::newRow("decode, no overlap") << QString::fromLatin1(kNvlDecode) << QStringLiteral("none");
    QTest::newRow("decode, two-batch") << QString::fromLatin1(kNvlDecode) << QStringLiteral("two-batch");
}

void TestSim::movingLoadOffTheSlowestGpuNeverSlowsALayer()
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

void TestSim::nvl72BeatsHgxForDeepSeekDecode()
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

// --- weight formats ------------------------------------------------------------------------------

void TestSim::weightFormatsHaveTheirBytesPerParameter()
{
    QCOMPARE(bytesPerElement(DType::nvfp4), 0.5625);   // 4 bits + one fp8 scale per 16
    QCOMPARE(bytesPerElement(DType::mxfp4), 0.53125);  // 4 bits + one e8m0 scale per 32
    QCOMPARE(bytesPerElement(DType::int4), 0.5625);    // 4 bits + one bf16 scale per 32
    QCOMPARE(bytesPerElement(DType::fp8), 1.0 + 4.0 / 16384.0);  // one fp32 scale per 128x128
    QCOMPARE(bytesPerElement(DType::bf16), 2.0);

    const Scenario fp8 = load(kNvlDecode);
    const Scenario fp4 = load(kNvlDecode, {{"precision.weights", "nvfp4"}});
    const Scenario mx = load(kNvlDecode, {{"precision.weights", "mxfp4"}});
    QVERIFY(fp4.precision.weights == DType::nvfp4);
    QVERIFY(fp8.precision.weights == DType::fp8);  // follows the model's weight_dtype
    const double params = 3.0 * 7168 * 2048;
    QCOMPARE(static_cast<double>(fp8.model.expertParams()), params);
    const Calibration cal = resolveCalibration(fp8);
    const ComputeModel cm4(fp4.model, fp4.topology.gpu, cal, DType::nvfp4);
    const ComputeModel cmMx(mx.model, mx.topology.gpu, cal, DType::mxfp4);
    const ComputeModel cm8(fp8.model, fp8.topology.gpu, cal, DType::fp8);
    QCOMPARE(cm4.expertBytes(), 3.0 * 7168 * 2048 * 0.5625);
    QCOMPARE(cmMx.expertBytes(), 3.0 * 7168 * 2048 * 0.53125);
    QCOMPARE(cm8.expertBytes(), 3.0 * 7168 * 2048 + 3.0 * (7168.0 * 2048 / 16384) * 4);
    // FP4 tensor rate on Blackwell; Hopper has none and runs 4-bit weights at the BF16 rate.
    QCOMPARE(cm4.expertPeakTflops(), fp4.topology.gpu.fp4_tflops);
    const Scenario hopper = load(kHgxDecode);
    const ComputeModel cmH(hopper.model, hopper.topology.gpu, resolveCalibration(hopper), DType::nvfp4);
    QCOMPARE(cmH.expertPeakTflops(), hopper.topology.gpu.bf16_tflops);

    // The simulator stores the placed slots at those bytes: per GPU, hbm_used differs by exactly
    // slots x (fp8 - nvfp4 expert bytes); the batch (and so the KV cache) is the same.
    const RoutingSample r = sampleOf(fp8);
    Simulator sim8(fp8, placementFor(fp8, r), cal);
    Simulator sim4(fp4, placementFor(fp4, r), cal);
    QCOMPARE(sim4.computeModel().expertBytes(), cm4.expertBytes());
    StepMetrics m8, m4;
    sim8.step(r, m8);
    sim4.step(r, m4);
    QCOMPARE(m4.summary.batch_per_gpu, m8.summary.batch_per_gpu);
    const Placement& p = sim8.placement();
    for (int g = 0; g < fp8.topology.numGpus(); ++g) {
        const double expected = slotsOn(p, g) * (cm8.expertBytes() - cm4.expertBytes()) / 1e9;
        const double got = m8.gpus[static_cast<std::size_t>(g)].hbm_used_gb - m4.gpus[static_cast<std::size_t>(g)].hbm_used_gb;
        QVERIFY2(near(got, expected, 1e-9), qPrintable(QStringLiteral("gpu%1: %2 vs %3 GB").arg(g).arg(got).arg(expected)));
    }
    QVERIFY(m4.summary.hbm_used_gb_max < m8.summary.hbm_used_gb_max);
    QVERIFY(m4.summary.max_concurrent_users > m8.summary.max_concurrent_users);
}

// --- expert compute: roofline with GEMM tile quantisation (DESIGN.md 5.4) -------------------------

void TestSim::expertComputeIsARooflineWithTiles()
{
    for (const char* name : {kNvlDecode, kHgxDecode}) {
        const Scenario s = load(name);
        const Calibration cal = resolveCalibration(s);
        const ComputeModel cm(s.model, s.topology.gpu, cal, s.precision.weights);
        const int tile = cal.gemm_tile_tokens;
        QVERIFY(tile > 1);
        QCOMPARE(cm.expertSlotUs(0), 0.0);  // an empty slot is skipped
        // A handful of decode tokens: streaming the expert's weights from HBM sets the time.
        const double weightsUs = cm.expertBytes() / (s.topology.gpu.hbm_bw_gbs * 1e9 * cal.hbm_efficiency) * 1e6;
        QVERIFY(cm.expertSlotUs(1) >= weightsUs);
        QVERIFY(cm.expertSlotUs(1) <= 1.01 * weightsUs);
        // Many tokens: the math sets it, and tokens are padded to the tile, so every count in
        // (k * tile, (k + 1) * tile] costs the same and the next token starts a new tile.
        const int k = 64;
        const double full = cm.expertSlotUs(static_cast<double>((k + 1) * tile));
        const double flopsUs = 6.0 * (k + 1) * tile * s.model.hidden_size * s.model.moe_intermediate_size
            / (cm.expertPeakTflops() * 1e12 * cal.gemm_efficiency) * 1e6;
        QVERIFY(near(full, flopsUs, 1e-9));
        QVERIFY(near(cm.expertSlotUs(static_cast<double>(k * tile + 1)), full, 1e-9));
        QVERIFY(cm.expertSlotUs(static_cast<double>((k + 1) * tile + 1)) > full);
        // Never cheaper with more tokens.
        double prev = 0;
        for (int n = 1; n <= 40 * tile; n += 7) {
            const double us = cm.expertSlotUs(n);
            QVERIFY(us >= prev);
            prev = us;
        }
    }
    // The simulator's loop over a layer's slots (branch-free, vectorised, a multiply by the
    // reciprocal of a power-of-two tile) gives expertSlotUs's values bit for bit, for whole and
    // fractional token counts (replica shares), at tile edges, for the tiles of both
    // calibrations and for tiles that are not powers of two.
    const Scenario s = load(kNvlDecode);
    for (int tile : {128, 64, 48, 3, 1}) {
        Calibration cal = resolveCalibration(s);
        cal.gemm_tile_tokens = tile;
        const ComputeModel cm(s.model, s.topology.gpu, cal, s.precision.weights);
        std::vector<double> tokens = {0, 0.25, 0.5, 1, 2, 3.5, tile - 0.5, double(tile), tile + 1e-9, 2.0 * tile, 1e6 + 0.5, 65535};
        for (int n = 0; n < 101; ++n)
            tokens.push_back(n * 0.37 * tile);
        for (int k = 1; k <= 8; ++k) {  // one ULP either side of a tile edge: t x (1 / 48) is not t / 48 there
            tokens.push_back(std::nextafter(double(k * tile), 1e9));
            tokens.push_back(std::nextafter(double(k * tile), 0.0));
        }
        std::vector<double> full(tokens.size(), -1), half(tokens.size(), -1), fullOnly(tokens.size(), -1);
        cm.expertSlotsUs(tokens.data(), tokens.size(), full.data(), half.data());
        cm.expertSlotsUs(tokens.data(), tokens.size(), fullOnly.data(), nullptr);
        for (std::size_t i = 0; i < tokens.size(); ++i) {
            const double want = cm.expertSlotUs(tokens[i]), wantHalf = cm.expertSlotUs(tokens[i] / 2);
            QVERIFY2(std::memcmp(&full[i], &want, sizeof want) == 0 && std::memcmp(&fullOnly[i], &want, sizeof want) == 0,
                     qPrintable(QStringLiteral("tile %1, %2 tokens: %3, expertSlotUs %4").arg(tile).arg(tokens[i]).arg(full[i]).arg(want)));
            QVERIFY2(std::memcmp(&half[i], &wantHalf, sizeof want) == 0,
                     qPrintable(QStringLiteral("tile %1, half of %2 tokens: %3, expertSlotUs %4").arg(tile).arg(tokens[i]).arg(half[i]).arg(wantHalf)));
        }
    }
}

// --- doubling tokens lengthens the step ------------------------------------------------------------

void TestSim::doublingTokensLengthensTheStep_data()
{
    QTest::addColumn<QString>("scenario");
    QTest::addColumn<int>("tokens");  // the first of three doublings
    QTest::newRow("nvl72 decode") << QString::fromLatin1(kNvlDecode) << 64;
    QTest::newRow("hgx decode") << QString::fromLatin1(kHgxDecode) << 64;
    QTest::newRow("nvl72 prefill") << QString::fromLatin1(kNvlPrefill) << 1024;
    QTest::newRow("hgx prefill") << QString::fromLatin1(kHgxPrefill) << 1024;
    QTest::newRow("mixtral decode") << QString::fromLatin1(kMixtral) << 16;
}

void TestSim::doublingTokensLengthensTheStep()
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

void TestSim::skewRaisesImbalance()
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

// --- token-expert pairs are conserved --------------------------------------------------------------

void TestSim::tokenExpertPairsAreConserved_data()
{
    QTest::addColumn<QString>("file");
    QTest::addColumn<QStringList>("overrides");
    QTest::addColumn<bool>("shares");
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(kScenarios))
        if (e.path().extension() == ".yaml")
            files.push_back(e.path().stem().string());
    std::sort(files.begin(), files.end());
    QVERIFY(files.size() >= 10);
    for (const auto& f : files)
        QTest::newRow(f.c_str()) << QString::fromStdString(f) << QStringList() << false;
    QTest::newRow("explicit shares, nvl72") << QString::fromLatin1(kNvlDecode) << QStringList() << true;
    QTest::newRow("explicit shares, hgx prefill") << QString::fromLatin1(kHgxPrefill) << QStringList() << true;
    QTest::newRow("contiguous + 96 redundant, hgx") << QString::fromLatin1(kHgxDecode)
                                       << QStringList{QStringLiteral("placement.strategy=contiguous"),
                                                      QStringLiteral("placement.redundant_slots=96")}
                                       << false;
    QTest::newRow("memory-limited batch") << QString::fromLatin1(kHgxDecode)
                                          << QStringList{QStringLiteral("workload.tokens_per_gpu=2048")} << false;
}

void TestSim::tokenExpertPairsAreConserved()
{
    QFETCH(QString, file);
    QFETCH(QStringList, overrides);
    QFETCH(bool, shares);
    Overrides o;
    for (const QString& kv : overrides)
        o.push_back(parseOverride(kv.toStdString()));
    const Scenario s = load(file.toStdString(), o);
    const RoutingSample r = sampleOf(s);
    const Placement p = shares ? withShares(placementFor(s, r)) : placementFor(s, r);
    if (shares)
        QVERIFY(checkPlacement(p, s.model.routed_experts, s.topology.numGpus()).empty());
    const StepMetrics m = stepWith(s, r, p);
    const int G = s.topology.numGpus();
    const int L = s.model.numMoeLayers();
    const int E = s.model.routed_experts;
    QCOMPARE(m.num_gpus, G);
    QCOMPARE(static_cast<int>(m.gpus.size()), G);
    QCOMPARE(static_cast<int>(m.layers.size()), L);
    QCOMPARE(m.traffic.size(), static_cast<std::size_t>(G) * static_cast<std::size_t>(G));
    const std::int64_t batch = m.summary.batch_per_gpu;
    if (file == QLatin1String(kHgxDecode) && !overrides.isEmpty() && overrides.front().contains(QLatin1String("2048")))
        QVERIFY(m.summary.memory_limited && batch < 2048);
    else
        QCOMPARE(batch, static_cast<std::int64_t>(s.workload.tokens_per_gpu));
    const std::int64_t pairs = batch * G * s.model.experts_per_token;
    std::int64_t gpuPairs = 0;
    int expertSumsOff = 0;
    QString firstOff;
    for (int l = 0; l < L; ++l) {
        const LayerMetrics& lm = m.layers[static_cast<std::size_t>(l)];
        QCOMPARE(static_cast<int>(lm.expert_load.size()), E);
        QCOMPARE(static_cast<int>(lm.gpu_load.size()), G);
        QVERIFY(std::all_of(lm.expert_load.begin(), lm.expert_load.end(), [](std::int64_t x) { return x >= 0; }));
        QVERIFY(std::all_of(lm.gpu_load.begin(), lm.gpu_load.end(), [](std::int64_t x) { return x >= 0; }));
        QVERIFY2(sum(lm.gpu_load) == pairs, qPrintable(QStringLiteral("layer %1: gpu_load sums to %2, batch x GPUs x top-k = %3")
                                                           .arg(l).arg(sum(lm.gpu_load)).arg(pairs)));
        if (sum(lm.expert_load) != pairs && expertSumsOff++ == 0)
            firstOff = QStringLiteral("layer %1: expert_load sums to %2, batch x GPUs x top-k = %3")
                           .arg(l).arg(sum(lm.expert_load)).arg(pairs);
        gpuPairs += pairs;
    }
    QVERIFY2(expertSumsOff == 0, qPrintable(QStringLiteral("%1 of %2 layers off; first: %3").arg(expertSumsOff).arg(L).arg(firstOff)));
    std::int64_t perGpu = 0;
    for (const GpuMetrics& g : m.gpus) {
        perGpu += g.expert_pairs;
        QCOMPARE(g.tokens, batch);
    }
    QCOMPARE(perGpu, gpuPairs);
}

// --- replica choice (DESIGN.md 5.1): same GPU first, then the same NVLink domain ---------------------

void TestSim::replicasOnTheSameGpuOrDomainServeFirst()
{
    // Every GPU holds every Mixtral expert: all tokens stay home, nothing crosses NVLink.
    {
        const Scenario s = load(kMixtral);
        const int G = s.topology.numGpus();
        const int E = s.model.routed_experts;
        const Placement p = contiguousPlacement(E, G, s.model.numMoeLayers(), E * (G - 1));
        for (const auto& gs : p.layers.front().gpu_slots)
            QCOMPARE(static_cast<int>(gs.size()), E);
        const StepMetrics m = stepWith(s, sampleOf(s), p);
        QVERIFY(std::all_of(m.traffic.begin(), m.traffic.end(), [](double b) { return b == 0.0; }));
        for (const LinkMetrics& l : m.links)
            QCOMPARE(l.bytes, 0.0);
        const std::int64_t own = m.summary.batch_per_gpu * s.model.experts_per_token;
        for (const LayerMetrics& l : m.layers)
            for (const std::int64_t x : l.gpu_load)
                QCOMPARE(x, own);
    }
    // Every HGX node holds every DeepSeek expert: tokens never leave their node.
    for (const char* name : {kHgxPrefill, kHgxDecode}) {
        const Scenario s = load(name);
        const int G = s.topology.numGpus();
        const int E = s.model.routed_experts;
        const int nodes = s.topology.numDomains();
        QCOMPARE(nodes, 8);
        const Placement p = contiguousPlacement(E, G, s.model.numMoeLayers(), E * (nodes - 1));
        Simulator sim(s, p, resolveCalibration(s));
        StepMetrics m;
        sim.step(sampleOf(s), m);
        double intra = 0;
        for (int a = 0; a < G; ++a)
            for (int b = 0; b < G; ++b) {
                const double bytes = m.traffic[static_cast<std::size_t>(a) * G + b];
                if (sim.fabric().domainOf(a) != sim.fabric().domainOf(b))
                    QCOMPARE(bytes, 0.0);
                else
                    intra += bytes;
            }
        QVERIFY(intra > 0);
        QCOMPARE(portBytes(sim, PortKind::nicOut), 0.0);
        QCOMPARE(portBytes(sim, PortKind::nicIn), 0.0);
    }
}

// --- slower GPUs -------------------------------------------------------------------------------------
//
// Slowing GPU N by 0.8 changes only N's times (compute, attention) on the same routing: every
// layer's slowest compute is either unchanged (another GPU stays slowest) or N's, which can only
// have grown; a layer N led before it still leads, at exactly 1/0.8 the time.

void TestSim::slowerGpuNeverShortensTheStep()
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
void TestSim::slowerGpuWithTheLargestLoadIsTheStraggler()
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

// --- two-batch overlap -------------------------------------------------------------------------------
//
// What the model guarantees: with overlap a MoE layer lasts max(2 x half-batch communication,
// 2 x half-batch compute + attention). Halves never cost less than the whole (latency, floors and
// weight reads are paid twice; tiles round up), so an overlapped layer is never shorter than its
// full-batch communication nor than its full-batch expert compute. Whether overlap wins depends on
// the batch: at 4096 prefill tokens per GPU it does, clearly.

void TestSim::twoBatchOverlap()
{
    for (const char* name : {kNvlPrefill, kHgxPrefill, kNvlDecode, kHgxDecode}) {
        const Scenario tbo = load(name);
        QVERIFY(tbo.overlap == Overlap::two_batch);
        const Scenario none = load(name, {{"overlap", "none"}});
        const RoutingSample r = sampleOf(tbo);
        const StepMetrics a = stepOf(tbo, r);
        const StepMetrics b = stepOf(none, r);
        // The small kernels before the dispatch (top-k, quantisation: docs/MODEL.md section 9).
        const Simulator plain(none, placementFor(none, r), resolveCalibration(none));
        const double routing = plain.overheads(static_cast<double>(b.summary.batch_per_gpu)).per_moe_layer;
        QVERIFY(routing > 0);
        for (std::size_t l = 0; l < a.layers.size(); ++l) {
            const LayerMetrics& x = a.layers[l];
            QVERIFY(notAbove(x.dispatch_us + x.combine_us, x.time_us));
            QVERIFY(notAbove(x.compute_us, x.time_us));
            // Without overlap the layer is the plain sum.
            const LayerMetrics& y = b.layers[l];
            QVERIFY(near(y.time_us, y.dispatch_us + y.compute_us + y.combine_us + routing));
        }
        // Overlap changes timing, not the work: same phases, same compute, same loads.
        QVERIFY(near(a.summary.dispatch_us, b.summary.dispatch_us));
        QVERIFY(near(a.summary.expert_compute_us, b.summary.expert_compute_us));
        if (tbo.workload.phase == Phase::prefill)
            QVERIFY2(a.summary.step_time_us < 0.95 * b.summary.step_time_us,
                     qPrintable(QStringLiteral("%1: overlap %2 us vs none %3 us").arg(QString::fromLatin1(name))
                                    .arg(a.summary.step_time_us).arg(b.summary.step_time_us)));
    }
}

// The two-batch schedule, stage by stage (docs/MODEL.md section 5): with halves attention a,
// experts m, dispatch d, combine c the layer is max(a,c) + max(a,d) + max(m,d) + max(m,c).
void TestSim::twoBatchOverlapStageByStage()
{
    // Balanced: everything hides, the layer is either stream alone (the old steady state).
    QCOMPARE(Simulator::twoBatchLayerUs(2, 2, 2, 2), 8.0);
    // Nothing to hide behind: each stream alone.
    QCOMPARE(Simulator::twoBatchLayerUs(3, 1, 0, 0), 8.0);
    QCOMPARE(Simulator::twoBatchLayerUs(0, 0, 3, 1), 8.0);
    // Equal totals, misaligned stages: attention long where dispatch is long, experts short where
    // combine is short: 3 + 3 + 3 + 1 = 10, not max(2 (3 + 1), 2 (3 + 1)) = 8.
    QCOMPARE(Simulator::twoBatchLayerUs(3, 1, 3, 1), 10.0);
    QCOMPARE(Simulator::twoBatchLayerUs(1, 3, 3, 1), 1.0 + 3.0 + 3.0 + 3.0);  // combine B hides behind attention A
    // Half of each stage's shorter side hidden: (3 + 0.5) + (3 + 1.5) + (3 + 0.5) + (1 + 0.5); none
    // hidden: the two half batches one after the other, every term twice.
    QCOMPARE(Simulator::twoBatchLayerUs(3, 1, 3, 1, 0.5), 13.0);
    QCOMPARE(Simulator::twoBatchLayerUs(3, 1, 3, 1, 0.0), 2.0 * (3 + 1 + 3 + 1));
    QCOMPARE(Simulator::twoBatchLayerUs(3, 1, 3, 1, 1.0), Simulator::twoBatchLayerUs(3, 1, 3, 1));

    // Normal kernels hold SMs: with less of them left to compute a compute-bound prefill layer
    // stretches in proportion; decode's low-latency kernels hold none, so the share is ignored.
    for (const char* name : {kNvlPrefill, kNvlDecode}) {
        const Scenario s = load(name);
        QVERIFY(s.overlap == Overlap::two_batch);
        const RoutingSample r = sampleOf(s);
        const Placement p = placementFor(s, r);
        Calibration full = resolveCalibration(s);
        full.overlap_sm_share = 1.0;
        Calibration half = full;
        half.overlap_sm_share = 0.5;
        Simulator a(s, p, full), b(s, p, half);
        QCOMPARE(a.overlapComputeShare(), 1.0);
        const double ta = a.layerTimeUs(r, 0), tb = b.layerTimeUs(r, 0);
        if (s.workload.phase == Phase::prefill) {
            QCOMPARE(b.overlapComputeShare(), 0.5);
            QVERIFY2(tb > 1.3 * ta, qPrintable(QStringLiteral("%1 us at share 0.5, %2 us at 1").arg(tb).arg(ta)));
            QVERIFY(tb <= 2.0 * ta + 1e-9);
        } else {
            QCOMPARE(b.overlapComputeShare(), 1.0);
            QCOMPARE(tb, ta);
        }
    }
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

// moe_time_balanced_us: each layer's expert work as placed, finished by all GPUs together (in
// proportion to speed), communication as simulated. Without overlap a layer is the plain sum, so
// the floor is written out from the per-GPU totals: work = compute_us x speed.
void TestSim::balancedFloorSpreadsEachLayersExpertWork()
{
    for (const char* name : {kNvlDecode, kHgxPrefill, kMixtral}) {
        const Scenario base = load(name, {{"overlap", "none"}});
        const RoutingSample r = sampleOf(base);
        const Placement p = placementFor(base, r);
        for (const char* speed : {"1.0", "0.7"}) {
            const Scenario s = load(name, {{"overlap", "none"}, {"gpus.speed.gpu1", speed}});
            const StepMetrics m = stepWith(s, r, p);
            double work = 0, speeds = 0;
            for (const GpuMetrics& g : m.gpus) {
                work += g.compute_us * g.speed;
                speeds += g.speed;
            }
            const double expected = m.summary.moe_time_us - m.summary.expert_compute_us + work / speeds;
            const QByteArray what = QByteArray(name) + " gpu1 at " + speed;
            QVERIFY2(near(m.summary.moe_time_balanced_us, expected),
                     qPrintable(QStringLiteral("%1: %2 vs %3").arg(QString::fromLatin1(what))
                                    .arg(m.summary.moe_time_balanced_us).arg(expected)));
            QVERIFY2(m.summary.moe_time_balanced_us < m.summary.moe_time_us, what.constData());
        }
        // With overlap: never above the MoE time, and a slow GPU widens the gap.
        const Scenario tbo = load(name);
        const Scenario tboSlow = load(name, {{"gpus.speed.gpu1", "0.7"}});
        const StepMetrics a = stepWith(tbo, r, p), b = stepWith(tboSlow, r, p);
        QVERIFY(notAbove(a.summary.moe_time_balanced_us, a.summary.moe_time_us));
        QVERIFY(b.summary.moe_time_us - b.summary.moe_time_balanced_us >
                a.summary.moe_time_us - a.summary.moe_time_balanced_us);
    }
}

// --- memory ----------------------------------------------------------------------------------------

void TestSim::redundantSlotsCostMemory()
{
    double prevHbm = 0;
    std::int64_t prevUsers = -1;
    int prevSlots = 0;
    for (const int redundant : {0, 32, 72, 144}) {
        const Scenario s = load(kNvlDecode, {{"placement.strategy", "contiguous"},
                                             {"placement.redundant_slots", std::to_string(redundant)}});
        const Placement p = resolvePlacement(s);
        const Calibration cal = resolveCalibration(s);
        const StepMetrics m = stepWith(s, sampleOf(s), p);
        const int G = s.topology.numGpus();
        // The bookkeeping of DESIGN.md 5.7: the fullest GPU's weights bound the KV cache.
        const ComputeModel cm(s.model, s.topology.gpu, cal, s.precision.weights);
        double maxWeights = 0;
        for (int g = 0; g < G; ++g)
            maxWeights = std::max(maxWeights, slotsOn(p, g) * cm.expertBytes() + s.model.nonExpertBytes());
        const double kv = cm.kvBytesPerSequence(s.workload.context_tokens);
        const auto users = static_cast<std::int64_t>(
            (s.topology.gpu.hbm_usable_gb * 1e9 - maxWeights - cal.activation_reserve_gb * 1e9) / kv);
        QCOMPARE(m.summary.max_concurrent_users, users * G);
        QVERIFY(near(m.summary.hbm_used_gb_max,
                     (maxWeights + cal.activation_reserve_gb * 1e9 + static_cast<double>(m.summary.batch_per_gpu) * kv) / 1e9));
        double maxGpu = 0;
        for (const GpuMetrics& g : m.gpus)
            maxGpu = std::max(maxGpu, g.hbm_used_gb);
        QCOMPARE(m.summary.hbm_used_gb_max, maxGpu);
        QVERIFY(m.summary.hbm_used_gb_max <= s.topology.gpu.hbm_usable_gb);

        const int gslots = p.maxSlotsPerGpu();
        if (prevUsers >= 0) {
            QVERIFY(m.summary.hbm_used_gb_max >= prevHbm);
            QVERIFY(m.summary.max_concurrent_users <= prevUsers);
            if (gslots > prevSlots) {  // the fullest GPU holds more experts
                QVERIFY2(m.summary.hbm_used_gb_max > prevHbm, qPrintable(QStringLiteral("redundant %1").arg(redundant)));
                QVERIFY(m.summary.max_concurrent_users < prevUsers);
            }
        }
        prevHbm = m.summary.hbm_used_gb_max;
        prevUsers = m.summary.max_concurrent_users;
        prevSlots = gslots;
    }
    QVERIFY(prevSlots > 4);  // the sweep did reach fuller GPUs
}

void TestSim::memoryLimitsTheBatch()
{
    const Overrides contiguous = {{"placement.strategy", "contiguous"}};  // the same slots whatever the batch
    const Scenario s = load(kHgxDecode, contiguous);
    const int G = s.topology.numGpus();
    const StepMetrics unlimited = stepOf(s);
    QVERIFY(!unlimited.summary.memory_limited);
    const std::int64_t limit = unlimited.summary.max_concurrent_users / G;
    QVERIFY(limit > s.workload.tokens_per_gpu);
    QVERIFY(limit < 4096);
    for (const std::int64_t want : {limit, limit + 1, std::int64_t{4096}}) {
        Overrides o = contiguous;
        o.emplace_back("workload.tokens_per_gpu", std::to_string(want));
        const Scenario t = load(kHgxDecode, o);
        const StepMetrics m = stepOf(t);
        QCOMPARE(m.summary.memory_limited, want > limit);
        QCOMPARE(m.summary.batch_per_gpu, limit);
        QCOMPARE(m.summary.max_concurrent_users, limit * G);
        QVERIFY(m.summary.hbm_used_gb_max <= t.topology.gpu.hbm_usable_gb + 1e-9);
        for (const GpuMetrics& g : m.gpus)
            QCOMPARE(g.tokens, limit);
        // Tokens per second count the batch actually run.
        QVERIFY(near(m.summary.tokens_per_s, static_cast<double>(limit * G) / (m.summary.step_time_us * 1e-6), 1e-9));
    }
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

// One NVLink domain takes a shorter path through route steps 2-3 (Simulator::setNvlinkFastPath);
// every figure of a step, of layerTimeUs and the last layer's port bytes must be the general
// path's, bit for bit.
void TestSim::nvlinkFastPathMatchesGeneralPath_data()
{
    QTest::addColumn<QString>("scenario");
    QTest::addColumn<QString>("tokens");  // tokens per GPU, empty: the sample's
    QTest::addColumn<bool>("applies");
    QTest::newRow("NVL72 decode") << QString::fromLatin1(kNvlDecode) << QString() << true;
    // Above the kernels' latency floor, where the per-message cost of low-latency kernels shows.
    QTest::newRow("NVL72 decode, 1024 tokens") << QString::fromLatin1(kNvlDecode) << QStringLiteral("1024") << true;
    QTest::newRow("NVL72 decode, one-sided kernels") << QStringLiteral("deepseek-r1-decode-nvl72?one-sided") << QString() << true;
    QTest::newRow("NVL72 prefill (high-throughput kernels)") << QString::fromLatin1(kNvlPrefill) << QString() << true;
    QTest::newRow("NVL72, six slow GPUs") << QStringLiteral("deepseek-r1-decode-nvl72-slow-gpus") << QString() << true;
    QTest::newRow("one HGX-H100 node") << QString::fromLatin1(kMixtral) << QStringLiteral("2048") << true;
    QTest::newRow("8 x HGX-H200 (does not apply)") << QString::fromLatin1(kHgxDecode) << QString() << false;
}

namespace {
// Bit for bit (QCOMPARE of doubles is fuzzy).
bool sameBits(double x, double y)
{
    return std::memcmp(&x, &y, sizeof x) == 0;
}
bool sameBits(const std::vector<double>& x, const std::vector<double>& y)
{
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(double)) == 0;
}
}  // namespace

void TestSim::nvlinkFastPathMatchesGeneralPath()
{
    QFETCH(QString, scenario);
    QFETCH(QString, tokens);
    QFETCH(bool, applies);
    Overrides overrides;
    if (!tokens.isEmpty())
        overrides.push_back({"workload.tokens_per_gpu", tokens.toStdString()});
    if (scenario.endsWith(QStringLiteral("?one-sided"))) {
        scenario.chop(10);
        overrides.push_back({"a2a_kernel", "one-sided"});
    }
    const Scenario s = load(scenario.toStdString(), overrides);
    auto source = makeRoutingSource(s);
    RoutingSample r;
    source->next(r);
    const Placement p = placementFor(s, r);
    Calibration cal = resolveCalibration(s);
    cal.ll_message_us = 0.01;  // set here: the test must not depend on the default's value
    Simulator fast(s, p, cal);
    Simulator general(s, p, cal);
    QCOMPARE(fast.setNvlinkFastPath(true), applies);
    QCOMPARE(general.setNvlinkFastPath(false), applies);
    StepMetrics a, b;
    for (int step = 0; step < 2; ++step) {  // the second step starts from the first one's buffers
        fast.step(r, a);
        general.step(r, b);
        QVERIFY(sameBits(a.summary.step_time_us, b.summary.step_time_us));
        QVERIFY(sameBits(a.summary.dispatch_us, b.summary.dispatch_us));
        QVERIFY(sameBits(a.summary.combine_us, b.summary.combine_us));
        QVERIFY(sameBits(a.summary.tokens_per_s_per_kw, b.summary.tokens_per_s_per_kw));
        QVERIFY(sameBits(a.traffic, b.traffic));
        QCOMPARE(a.gpus.size(), b.gpus.size());
        for (std::size_t g = 0; g < a.gpus.size(); ++g) {
            QVERIFY(sameBits(a.gpus[g].dispatch_us, b.gpus[g].dispatch_us));
            QVERIFY(sameBits(a.gpus[g].combine_us, b.gpus[g].combine_us));
            QVERIFY(sameBits(a.gpus[g].idle_us, b.gpus[g].idle_us));
            QVERIFY(sameBits(a.gpus[g].power_w, b.gpus[g].power_w));
        }
        QCOMPARE(a.links.size(), b.links.size());
        for (std::size_t k = 0; k < a.links.size(); ++k) {
            QVERIFY(sameBits(a.links[k].bytes, b.links[k].bytes));
            QVERIFY(sameBits(a.links[k].utilization, b.links[k].utilization));
        }
        for (std::size_t l = 0; l < a.layers.size(); ++l) {
            QVERIFY(sameBits(a.layers[l].time_us, b.layers[l].time_us));
            QVERIFY(sameBits(a.layers[l].dispatch_us, b.layers[l].dispatch_us));
            QVERIFY(sameBits(a.layers[l].combine_us, b.layers[l].combine_us));
        }
        QVERIFY(sameBits(fast.lastDispatchPortBytes(), general.lastDispatchPortBytes()));
        QVERIFY(sameBits(fast.lastCombinePortBytes(), general.lastCombinePortBytes()));
        source->next(r);
    }
    QVERIFY(a.summary.dispatch_us > 0);
    for (int l : {0, r.numLayers() / 2, r.numLayers() - 1}) {
        QVERIFY(sameBits(fast.layerTimeUs(r, l), general.layerTimeUs(r, l)));
        QVERIFY(sameBits(fast.lastDispatchPortBytes(), general.lastDispatchPortBytes()));
        QVERIFY(sameBits(fast.lastCombinePortBytes(), general.lastCombinePortBytes()));
    }
}

// --- all-to-all against line rate ---------------------------------------------------------------------

void TestSim::allToAllRespectsLineRate_data()
{
    QTest::addColumn<QString>("scenario");
    QTest::newRow("hgx-h100") << QString::fromLatin1(kMixtral);
    QTest::newRow("gb200-nvl72") << QString::fromLatin1(kNvlDecode);
}

void TestSim::allToAllRespectsLineRate()
{
    QFETCH(QString, scenario);
    const Scenario s = load(scenario.toStdString());
    const int G = s.topology.numGpus();
    const Placement p = contiguousPlacement(s.model.routed_experts, G, s.model.numMoeLayers());
    Simulator sim(s, p, resolveCalibration(s));
    QCOMPARE(sim.fabric().numDomains(), 1);
    // Line rate of one GPU's NVLink ports (out) and the calibrated efficiency.
    const double line = sim.fabric().ports()[static_cast<std::size_t>(sim.fabric().nvOut(0))].capacity_gbs;
    QVERIFY(line > 0);
    QVERIFY(near(line, s.topology.gpu.nvlink_gbs_per_dir, 1e-6));
    const double eff = sim.calibration().nvlink_efficiency;
    auto uniform = [&](double perGpu) {
        std::vector<double> pairs(static_cast<std::size_t>(G) * static_cast<std::size_t>(G), perGpu / (G - 1));
        for (int g = 0; g < G; ++g)
            pairs[static_cast<std::size_t>(g) * G + g] = 0;
        return pairs;
    };
    const double gib = 1024.0 * 1024 * 1024;
    const double t1 = sim.allToAllUs(uniform(gib), 0.0);
    const double t2 = sim.allToAllUs(uniform(2 * gib), 0.0);
    // Bus bandwidth: bytes each GPU puts on the wire over the time.
    const double busbw = gib / (t1 * 1e3);
    QVERIFY2(busbw <= line * eff * (1 + 1e-6), qPrintable(QStringLiteral("%1 GB/s > %2 x %3").arg(busbw).arg(line).arg(eff)));
    QVERIFY2(busbw >= 0.95 * line * eff, qPrintable(QStringLiteral("%1 GB/s << %2 x %3").arg(busbw).arg(line).arg(eff)));
    QVERIFY2(t2 / t1 > 1.95 && t2 / t1 <= 2.0 + 1e-6, qPrintable(QStringLiteral("t(2B)/t(B) = %1").arg(t2 / t1)));
    // Small messages: never below the floor, and the latency keeps tiny ones above zero.
    QCOMPARE(sim.allToAllUs(uniform(1024), 25.0), 25.0);
    QVERIFY(sim.allToAllUs(uniform(1024), 0.0) > 0.0);
    QVERIFY(sim.allToAllUs(uniform(gib / 8), 0.0) < t1);

    // A calibration with a per-message cost for low-latency kernels (ll_message_us, a key of the
    // calibration file) may add a little per token message; 0.001 us per message is ~150k tokens'
    // worth of 7 KB messages per GiB: +10%, never orders of magnitude.
    Calibration withMessages = sim.calibration();
    withMessages.ll_message_us = 0.001;
    Simulator simMsg(s, p, withMessages);
    simMsg.setKernelMode(KernelMode::low_latency);
    sim.setKernelMode(KernelMode::low_latency);
    const double plain = sim.allToAllUs(uniform(gib), 0.0);
    const double charged = simMsg.allToAllUs(uniform(gib), 0.0);
    QVERIFY(charged >= plain);
    qInfo("all-to-all of 1 GiB per GPU: %.0f us, with ll_message_us = 0.001: %.0f us", plain, charged);
    QVERIFY2(charged <= 1.5 * plain, qPrintable(QStringLiteral("%1 us with ll_message_us=0.001 vs %2 us").arg(charged).arg(plain)));
}

// --- links agree with ports and the traffic matrix ------------------------------------------------------

void TestSim::linksAgreeWithPortsAndTraffic_data()
{
    QTest::addColumn<QString>("scenario");
    for (const char* s : {kNvlDecode, kHgxDecode, kNvlPrefill, kHgxPrefill})
        QTest::newRow(s) << QString::fromLatin1(s);
}

void TestSim::linksAgreeWithPortsAndTraffic()
{
    QFETCH(QString, scenario);
    const Scenario full = load(scenario.toStdString());
    const int G = full.topology.numGpus();
    auto checkUtilization = [](const Scenario& s, const StepMetrics& m) {
        const double commUs = m.summary.dispatch_us + m.summary.combine_us;
        QVERIFY(!m.links.empty());
        for (const LinkMetrics& l : m.links) {
            QVERIFY(l.bytes >= 0 && std::isfinite(l.bytes));
            QVERIFY(l.utilization >= 0.0 && l.utilization <= 1.0);
            QVERIFY(l.capacity_gbs > 0);
            // Unclamped: no link is busy longer than the step's communication.
            QVERIFY2(l.bytes / (l.capacity_gbs * 1e3 * commUs) <= 1.0 + 1e-9,
                     qPrintable(QStringLiteral("link %1 -> %2").arg(QString::fromStdString(s.topology.nodes()[static_cast<std::size_t>(l.from)].name),
                                                                    QString::fromStdString(s.topology.nodes()[static_cast<std::size_t>(l.to)].name))));
        }
    };

    // One MoE layer: the step's link bytes are exactly the last layer's dispatch + combine ports.
    Scenario one = full;
    one.model.moe_layers = {full.model.moe_layers.front()};
    const RoutingSample r = sampleOf(one);
    Simulator sim(one, placementFor(one, r), resolveCalibration(one));
    StepMetrics m;
    sim.step(r, m);
    QCOMPARE(static_cast<int>(m.layers.size()), 1);
    checkUtilization(one, m);
    const Fabric& fabric = sim.fabric();
    const auto& links = one.topology.links();
    auto linkKind = [&](const LinkMetrics& l) {
        for (const TopoLink& t : links)
            if (static_cast<int>(t.from.index()) == l.from && static_cast<int>(t.to.index()) == l.to)
                return t.kind;
        return LinkKind::c2c;
    };
    double totalNv = 0;
    for (int g = 0; g < G; ++g) {
        const int gpuNode = static_cast<int>(one.topology.gpuNode(GpuId(g)).index());
        double nvLinks = 0;
        for (const LinkMetrics& l : m.links)
            if (l.from == gpuNode && linkKind(l) == LinkKind::nvlink)
                nvLinks += l.bytes;
        const auto p = static_cast<std::size_t>(fabric.nvOut(g));
        const double port = sim.lastDispatchPortBytes()[p] + sim.lastCombinePortBytes()[p];
        QVERIFY2(near(nvLinks, port, 1e-9), qPrintable(QStringLiteral("gpu%1: links %2 vs port %3").arg(g).arg(nvLinks).arg(port)));
        totalNv += port;
    }
    QVERIFY(totalNv > 0);

    // The whole step: with low-latency kernels (decode) every byte a GPU sends leaves over its own
    // NVLink or NIC links, so each GPU's out-links carry exactly its row of the traffic matrix.
    if (full.workload.phase != Phase::decode)
        return;
    const StepMetrics mf = stepOf(full);
    checkUtilization(full, mf);
    for (int g = 0; g < G; ++g) {
        const int gpuNode = static_cast<int>(full.topology.gpuNode(GpuId(g)).index());
        double out = 0;
        for (const LinkMetrics& l : mf.links)
            if (l.from == gpuNode)
                out += l.bytes;
        double row = 0;
        for (int d = 0; d < G; ++d)
            row += mf.traffic[static_cast<std::size_t>(g) * G + d];
        QCOMPARE(mf.traffic[static_cast<std::size_t>(g) * G + g], 0.0);
        QVERIFY2(near(out, row, 1e-6), qPrintable(QStringLiteral("gpu%1: links %2 vs traffic %3").arg(g).arg(out).arg(row)));
    }
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


// Low-latency kernels, on a hand-made layer of the 8 x HGX-H200 sample (64 GPUs, 4 experts each,
// contiguous): every token of GPU 0 picks experts 4 and 5 (both on GPU 1) and experts 40..45
// (GPUs 10 and 11, another node). DeepEP's kernels send each pair: 2T pairs to GPU 1, 4T to GPU 10
// and 2T to GPU 11, so GPU 0's NVLink port carries 2T tokens' bytes and its NIC 6T, and each of
// its 8T pairs costs ll_message_us (the other GPUs send 4T). One-sided kernels send a token once per GPU: T to GPU 1 over
// NVLink, T to each of GPUs 10 and 11 over the NIC, and no per-message cost.
void TestSim::lowLatencyKernelsCountPairsOrGpus()
{
    Scenario s = load(kHgxDecode);
    s.model.moe_layers = {s.model.moe_layers.front()};
    s.workload.tokens_per_gpu = 64;
    const int G = s.topology.numGpus();
    const int E = s.model.routed_experts;
    QCOMPARE(G, 64);
    QCOMPARE(E, 256);
    const int T = 64;
    RoutingSample r;
    r.resize(1, G, E, T, 8);
    auto row = [&](int src) { return r.layer(0).subspan(static_cast<std::size_t>(src) * E, static_cast<std::size_t>(E)); };
    for (int e : {4, 5, 40, 41, 42, 43, 44, 45})
        row(0)[static_cast<std::size_t>(e)] = static_cast<RoutingSample::Count>(T);
    for (int src = 1; src < G; ++src) {  // the others: their own GPU's experts and the next GPU's (never GPU 0's)
        const int next = src + 1 < G ? src + 1 : 1;
        for (int k = 0; k < 4; ++k) {
            row(src)[static_cast<std::size_t>(src * 4 + k)] = static_cast<RoutingSample::Count>(T);
            row(src)[static_cast<std::size_t>(next * 4 + k)] = static_cast<RoutingSample::Count>(T);
        }
    }
    const Placement p = contiguousPlacement(E, G, s.model.numMoeLayers());
    const double bd = Simulator(s, p, resolveCalibration(s)).dispatchBytesPerToken();
    QCOMPARE(bd, 7168 * (1.0 + 4.0 / 128));  // FP8 with one 4-byte scale per 128 elements
    Calibration cal = resolveCalibration(s);
    cal.ll_message_us = 0.5;
    struct Want {
        A2AKernel kernel;
        double nvTokens, nicTokens, messages;
    };
    for (const Want& w : {Want{A2AKernel::deepep, 2.0 * T, 6.0 * T, 8.0 * T}, Want{A2AKernel::one_sided, 1.0 * T, 2.0 * T, 0.0}}) {
        s.a2a_kernel = w.kernel;
        Simulator sim(s, p, cal);
        QVERIFY(sim.kernelMode() == KernelMode::low_latency);
        QCOMPARE(sim.perPairMessages(), w.kernel == A2AKernel::deepep);
        StepMetrics m;
        sim.step(r, m);
        const auto& ports = sim.lastDispatchPortBytes();
        QVERIFY(near(ports[static_cast<std::size_t>(sim.fabric().nvOut(0))], w.nvTokens * bd, 1e-6));
        QVERIFY(near(ports[static_cast<std::size_t>(sim.fabric().nicOut(0))], w.nicTokens * bd, 1e-6));
        // The traffic matrix holds what was sent (GPU 1 sends GPU 0 nothing, so no combine term).
        QVERIFY(near(m.traffic[1], w.nvTokens * bd, 1e-6));
        QVERIFY(near(m.traffic[10] + m.traffic[11], w.nicTokens * bd, 1e-6));
        // The phase: the busiest port, the route latency and, per pair, the messages of the GPU
        // that sends most (GPU 0: 8T pairs, 2T of them within its node).
        Simulator noMessages(s, p, [&] { Calibration c = cal; c.ll_message_us = 0; return c; }());
        StepMetrics m0;
        noMessages.step(r, m0);
        QVERIFY2(near(m.summary.dispatch_us - m0.summary.dispatch_us, w.messages * cal.ll_message_us, 1e-6),
                 qPrintable(QStringLiteral("%1 us with messages, %2 without").arg(m.summary.dispatch_us).arg(m0.summary.dispatch_us)));
    }
}

// A model state without KV cache (context 0 here) leaves the decode batch as the workload says:
// nothing bounds the concurrent sequences by memory (it used to give 0 users and an empty step).
void TestSim::noKvCacheMeansNoMemoryBoundOnTheBatch()
{
    Scenario s = load(kNvlDecode);
    s.workload.context_tokens = 0;
    Simulator sim(s, resolvePlacement(s), resolveCalibration(s));
    StepMetrics m;
    sim.step(sampleOf(s), m);
    QCOMPARE(m.summary.batch_per_gpu, static_cast<std::int64_t>(s.workload.tokens_per_gpu));
    QVERIFY(!m.summary.memory_limited);
    QVERIFY(m.summary.tokens_per_s > 0);
}

// Without two-batch overlap a GPU's busy time is its own dispatch, combine, compute and
// attention, each at its own speed; idle is what is left of the step. A full-speed GPU next to a
// slow one waits longer, it does not work longer.
void TestSim::idleTimeIsTheStepMinusEachGpusOwnWork()
{
    const Scenario s = load(kNvlDecode, {{"overlap", "none"}, {"gpus.speed.gpu5", "0.8"}});
    const RoutingSample r = sampleOf(s);
    const StepMetrics m = stepWith(s, r, placementFor(s, r));
    double minIdle = 1e300;
    for (std::size_t g = 0; g < m.gpus.size(); ++g) {
        const GpuMetrics& gm = m.gpus[g];
        const double busy = gm.compute_us + gm.attention_us + gm.dispatch_us + gm.combine_us;
        const QByteArray where = "gpu " + QByteArray::number(static_cast<int>(g));
        QVERIFY2(std::abs(gm.idle_us - std::max(0.0, m.summary.step_time_us - busy)) <= 1e-6 * m.summary.step_time_us,
                 where.constData());
        minIdle = std::min(minIdle, gm.idle_us);
    }
    QVERIFY(m.gpus[5].idle_us <= minIdle + 1e-9);  // the slow GPU waits least
    QVERIFY(m.gpus[0].idle_us > m.gpus[5].idle_us);
}

// NIC ports are PCIe then the network in series: a calibration with a poor PCIe efficiency makes
// a cross-node dispatch slower once PCIe becomes the bound.
void TestSim::pcieEfficiencyBoundsNicPorts()
{
    const Scenario s = load(kHgxDecode);
    const RoutingSample r = sampleOf(s);
    const Placement p = placementFor(s, r);
    Calibration cal = resolveCalibration(s);
    Simulator fast(s, p, cal);
    StepMetrics a;
    fast.step(r, a);
    cal.pcie_efficiency = 0.2;
    Simulator slow(s, p, cal);
    StepMetrics b;
    slow.step(r, b);
    QVERIFY(b.summary.dispatch_us > a.summary.dispatch_us);
    QVERIFY(b.summary.combine_us > a.summary.combine_us);
    QCOMPARE(b.summary.expert_compute_us, a.summary.expert_compute_us);
}

QTEST_APPLESS_MAIN(TestSim)
#include "tst_sim.moc"
