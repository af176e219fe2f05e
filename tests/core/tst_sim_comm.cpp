// The step model's communication (DESIGN.md section 5): token-expert pairs conserved through dispatch
// and combine, replicas served nearest first, two-batch overlap, the NVLink fast path bit for bit
// against the general path, all-to-all within line rates, the link view consistent with the
// fabric's ports and the traffic matrix, low-latency kernels, PCIe-bound NIC ports. Each property
// on the sample scenarios with --set-like overrides, one routing sample reused across variants.
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

class TestSimComm : public QObject {
    Q_OBJECT
private slots:
    void tokenExpertPairsAreConserved_data();
    void tokenExpertPairsAreConserved();
    void replicasOnTheSameGpuOrDomainServeFirst();
    void twoBatchOverlap();
    void twoBatchOverlapStageByStage();
    void nvlinkFastPathMatchesGeneralPath_data();
    void nvlinkFastPathMatchesGeneralPath();
    void allToAllRespectsLineRate_data();
    void allToAllRespectsLineRate();
    void linksAgreeWithPortsAndTraffic_data();
    void linksAgreeWithPortsAndTraffic();
    void lowLatencyKernelsCountPairsOrGpus();
    void pcieEfficiencyBoundsNicPorts();
};

// --- token-expert pairs are conserved --------------------------------------------------------------

void TestSimComm::tokenExpertPairsAreConserved_data()
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

void TestSimComm::tokenExpertPairsAreConserved()
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

void TestSimComm::replicasOnTheSameGpuOrDomainServeFirst()
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

// --- two-batch overlap -------------------------------------------------------------------------------
//
// What the model guarantees: with overlap a MoE layer lasts max(2 x half-batch communication,
// 2 x half-batch compute + attention). Halves never cost less than the whole (latency, floors and
// weight reads are paid twice; tiles round up), so an overlapped layer is never shorter than its
// full-batch communication nor than its full-batch expert compute. Whether overlap wins depends on
// the batch: at 4096 prefill tokens per GPU it does, clearly.

void TestSimComm::twoBatchOverlap()
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
void TestSimComm::twoBatchOverlapStageByStage()
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

// One NVLink domain takes a shorter path through route steps 2-3 (Simulator::setNvlinkFastPath);
// every figure of a step, of layerTimeUs and the last layer's port bytes must be the general
// path's, bit for bit.
void TestSimComm::nvlinkFastPathMatchesGeneralPath_data()
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

void TestSimComm::nvlinkFastPathMatchesGeneralPath()
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

void TestSimComm::allToAllRespectsLineRate_data()
{
    QTest::addColumn<QString>("scenario");
    QTest::newRow("hgx-h100") << QString::fromLatin1(kMixtral);
    QTest::newRow("gb200-nvl72") << QString::fromLatin1(kNvlDecode);
}

void TestSimComm::allToAllRespectsLineRate()
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

void TestSimComm::linksAgreeWithPortsAndTraffic_data()
{
    QTest::addColumn<QString>("scenario");
    for (const char* s : {kNvlDecode, kHgxDecode, kNvlPrefill, kHgxPrefill})
        QTest::newRow(s) << QString::fromLatin1(s);
}

void TestSimComm::linksAgreeWithPortsAndTraffic()
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


// Low-latency kernels, on a hand-made layer of the 8 x HGX-H200 sample (64 GPUs, 4 experts each,
// contiguous): every token of GPU 0 picks experts 4 and 5 (both on GPU 1) and experts 40..45
// (GPUs 10 and 11, another node). DeepEP's kernels send each pair: 2T pairs to GPU 1, 4T to GPU 10
// and 2T to GPU 11, so GPU 0's NVLink port carries 2T tokens' bytes and its NIC 6T, and each of
// its 8T pairs costs ll_message_us (the other GPUs send 4T). One-sided kernels send a token once per GPU: T to GPU 1 over
// NVLink, T to each of GPUs 10 and 11 over the NIC, and no per-message cost.
void TestSimComm::lowLatencyKernelsCountPairsOrGpus()
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

// NIC ports are PCIe then the network in series: a calibration with a poor PCIe efficiency makes
// a cross-node dispatch slower once PCIe becomes the bound.
void TestSimComm::pcieEfficiencyBoundsNicPorts()
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

QTEST_APPLESS_MAIN(TestSimComm)
#include "tst_sim_comm.moc"
