// Topology: built-in graphs against the hardware they model (FACTS.md 1), their routes, parameter
// overrides, the route build's time. Topology YAML (custom files, errors, round trips, the
// samples) is tst_topology_yaml.
#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "topology/builtin_topologies.h"

#include <chrono>
#include <cmath>
#include <map>
#include <set>
#endif

#include "topology_fixtures.h"

#include <QTest>

using namespace moex;
using moex::test::build;
using moex::test::near;

namespace {

// Per-GPU NVLink capacity leaving the GPU, GB/s per direction.
double nvlinkOut(const Topology& t, GpuId g)
{
    double sum = 0;
    for (LinkId l : t.outLinks(t.gpuNode(g)))
        if (t.link(l).kind == LinkKind::nvlink)
            sum += t.link(l).capacity_gbs;
    return sum;
}

// The GPU -> NIC link a route leaves its domain by (PXN or not), or an invalid id.
std::vector<NodeId> nicsUsed(const Topology& t, const Route& r)
{
    std::vector<NodeId> out;
    for (const LinkShare& ls : r.links) {
        const TopoLink& l = t.link(ls.link);
        if (t.node(l.from).kind == NodeKind::gpu && t.node(l.to).kind == NodeKind::nic)
            out.push_back(l.to);
    }
    return out;
}

}  // namespace

class TestTopology : public QObject {
    Q_OBJECT

private slots:
    void nvl72Structure();
    void nvl72Routes();
    void nvl72TwoRacks();
    void hgxStructure();
    void hgxRoutes();
    void hgxNoPxn();
    void nvlinkCapacityMatchesSpec_data();
    void nvlinkCapacityMatchesSpec();
    void overrides();
    void finalizeTiming();
};

void TestTopology::nvl72Structure()
{
    const Topology t = build("gb200-nvl72");
    QCOMPARE(t.numGpus(), 72);
    QCOMPARE(t.count(NodeKind::gpu), 72);
    QCOMPARE(t.count(NodeKind::cpu), 36);
    QCOMPARE(t.count(NodeKind::nvswitch), 18);
    QCOMPARE(t.count(NodeKind::nic), 72);
    QCOMPARE(t.numDomains(), 1);
    QCOMPARE(t.gpu.hbm_usable_gb, 186.0);

    std::map<int, int> gpusPerTray, cpusPerTray, nicsPerTray, chipsPerSwitchTray;
    for (const TopoNode& n : t.nodes()) {
        if (n.kind == NodeKind::gpu)
            ++gpusPerTray[n.pos.tray];
        if (n.kind == NodeKind::cpu)
            ++cpusPerTray[n.pos.tray];
        if (n.kind == NodeKind::nic)
            ++nicsPerTray[n.pos.tray];
        if (n.kind == NodeKind::nvswitch)
            ++chipsPerSwitchTray[n.pos.tray];
    }
    QCOMPARE(gpusPerTray.size(), std::size_t(18));
    QCOMPARE(cpusPerTray.size(), std::size_t(18));
    QCOMPARE(chipsPerSwitchTray.size(), std::size_t(9));
    for (const auto& [tray, n] : gpusPerTray) {
        QCOMPARE(n, 4);
        QCOMPARE(cpusPerTray[tray], 2);
        QCOMPARE(nicsPerTray[tray], 4);
    }
    for (const auto& entry : chipsPerSwitchTray)
        QCOMPARE(entry.second, 2);

    // One link from every GPU to every chip, each way, 50 GB/s (900 / 18).
    std::set<std::pair<int, int>> up, down;
    int gpuChip = 0, chipGpu = 0;
    for (const TopoLink& l : t.links()) {
        const NodeKind a = t.node(l.from).kind, b = t.node(l.to).kind;
        if (a == NodeKind::gpu && b == NodeKind::nvswitch) {
            ++gpuChip;
            up.emplace(l.from.value, l.to.value);
            QVERIFY(l.kind == LinkKind::nvlink);
            QCOMPARE(l.capacity_gbs, 50.0);
        }
        if (a == NodeKind::nvswitch && b == NodeKind::gpu) {
            ++chipGpu;
            down.emplace(l.to.value, l.from.value);
            QCOMPARE(l.capacity_gbs, 50.0);
        }
        if ((a == NodeKind::cpu) != (b == NodeKind::cpu)) {
            QVERIFY(l.kind == LinkKind::c2c);
            QCOMPARE(l.capacity_gbs, 450.0);
        }
    }
    QCOMPARE(gpuChip, 1296);
    QCOMPARE(chipGpu, 1296);
    QCOMPARE(up.size(), std::size_t(1296));  // distinct pairs: 72 x 18, no duplicates
    QCOMPARE(down, up);
    for (int g = 0; g < 72; ++g)
        QCOMPARE(nvlinkOut(t, GpuId(g)), 900.0);
}

void TestTopology::nvl72Routes()
{
    const Topology t = build("gb200-nvl72");
    QVERIFY(t.route(GpuId(5), GpuId(5)).links.empty());
    for (int s = 0; s < 72; ++s) {
        for (int d = 0; d < 72; ++d) {
            if (s == d)
                continue;
            const Route& r = t.route(GpuId(s), GpuId(d));
            QCOMPARE(r.hops, 2);
            QVERIFY(!r.crosses_network);
            QCOMPARE(r.links.size(), std::size_t(36));
            QVERIFY(near(r.latency_us, 0.5));
            double upSum = 0, downSum = 0;
            std::set<int> upChips, downChips;
            for (const LinkShare& ls : r.links) {
                const TopoLink& l = t.link(ls.link);
                QVERIFY(t.node(l.from).kind != NodeKind::cpu && t.node(l.to).kind != NodeKind::cpu);
                QVERIFY(near(ls.share, 1.0 / 18));
                if (l.from == t.gpuNode(GpuId(s))) {
                    upSum += ls.share;
                    upChips.insert(l.to.value);
                } else {
                    QCOMPARE(l.to, t.gpuNode(GpuId(d)));
                    downSum += ls.share;
                    downChips.insert(l.from.value);
                }
            }
            QCOMPARE(upChips.size(), std::size_t(18));
            QCOMPARE(downChips, upChips);
            QVERIFY(near(upSum, 1.0));
            QVERIFY(near(downSum, 1.0));
        }
    }
}

void TestTopology::nvl72TwoRacks()
{
    const Topology t = build("gb200-nvl72", 2);
    QCOMPARE(t.numGpus(), 144);
    QCOMPARE(t.numDomains(), 2);
    QCOMPARE(t.count(NodeKind::nvswitch), 36);
    QCOMPARE(t.domainOf(GpuId(71)), 0);
    QCOMPARE(t.domainOf(GpuId(72)), 1);
    QVERIFY(!t.route(GpuId(0), GpuId(71)).crosses_network);
    for (int s = 0; s < 72; s += 7)
        for (int d = 72; d < 144; d += 5)
            QVERIFY(t.route(GpuId(s), GpuId(d)).crosses_network);

    // Rail = place in the compute tray (4 NICs a tray). gpu0 (rail 0) -> gpu77 (rack 1, local 5,
    // rail 1): PXN moves the bytes over NVLink to gpu5 (local 5), whose NIC shares dst's leaf.
    const Route& viaProxy = t.route(GpuId(0), GpuId(77));
    const auto nics = nicsUsed(t, viaProxy);
    QCOMPARE(nics.size(), std::size_t(1));
    QCOMPARE(t.node(nics[0]).gpu, GpuId(5));
    QCOMPARE(viaProxy.hops, 6);  // 2 NVLink + GPU->NIC + NIC->leaf->NIC + NIC->GPU
    QCOMPARE(viaProxy.links.size(), std::size_t(36 + 4));
    for (const LinkShare& ls : viaProxy.links)
        QVERIFY(t.node(t.link(ls.link).to).kind != NodeKind::spine);
    // gpu1 is on rail 1 itself: straight onto its own NIC, no NVLink hop.
    const Route& direct = t.route(GpuId(1), GpuId(77));
    QCOMPARE(direct.hops, 4);
    QCOMPARE(direct.links.size(), std::size_t(4));
    QCOMPARE(t.node(nicsUsed(t, direct)[0]).gpu, GpuId(1));
}

void TestTopology::hgxStructure()
{
    const Topology t = build("hgx-h200", 8);
    QCOMPARE(t.numGpus(), 64);
    QCOMPARE(t.numDomains(), 8);
    QCOMPARE(t.count(NodeKind::nvswitch), 32);
    QCOMPARE(t.count(NodeKind::nic), 64);
    QCOMPARE(t.count(NodeKind::leaf), 8);   // one per rail
    QCOMPARE(t.count(NodeKind::spine), 4);  // rails / 2
    QCOMPARE(t.count(NodeKind::cpu), 0);
    QCOMPARE(t.gpu.name, std::string("H200 SXM"));
    // Non-blocking: a leaf's uplinks carry what its 8 NICs can send.
    const NodeId leaf = t.findNode("leaf3");
    QVERIFY(leaf.valid());
    double downlinks = 0, uplinks = 0;
    for (LinkId l : t.outLinks(leaf)) {
        const NodeKind k = t.node(t.link(l).to).kind;
        (k == NodeKind::nic ? downlinks : uplinks) += t.link(l).capacity_gbs;
    }
    QCOMPARE(downlinks, 8 * 50.0);
    QCOMPARE(uplinks, downlinks);
    // NIC r of every node is on leaf r.
    for (const TopoNode& n : t.nodes()) {
        if (n.kind != NodeKind::nic)
            continue;
        const NodeId self = t.findNode(n.name);
        int leaves = 0;
        for (LinkId l : t.outLinks(self)) {
            const TopoNode& to = t.node(t.link(l).to);
            if (to.kind == NodeKind::leaf) {
                ++leaves;
                QCOMPARE(to.name, "leaf" + std::to_string(n.gpu.value % 8));
            }
        }
        QCOMPARE(leaves, 1);
    }
}

void TestTopology::hgxRoutes()
{
    const Topology t = build("hgx-h200", 8);
    const Route& intra = t.route(GpuId(1), GpuId(6));
    QCOMPARE(intra.hops, 2);
    QVERIFY(!intra.crosses_network);
    QCOMPARE(intra.links.size(), std::size_t(8));
    std::set<int> chips;
    for (const LinkShare& ls : intra.links) {
        QVERIFY(near(ls.share, 0.25));
        const TopoLink& l = t.link(ls.link);
        chips.insert(t.node(l.from).kind == NodeKind::nvswitch ? l.from.value : l.to.value);
    }
    QCOMPARE(chips.size(), std::size_t(4));

    // gpu0 (node 0) -> gpu29 (node 3, local 5): over NVLink to gpu5, its NIC, leaf5, gpu29's NIC.
    const Route& cross = t.route(GpuId(0), GpuId(29));
    QVERIFY(cross.crosses_network);
    QCOMPARE(cross.hops, 6);
    const auto nics = nicsUsed(t, cross);
    QCOMPARE(nics.size(), std::size_t(1));
    QCOMPARE(t.node(nics[0]).gpu, GpuId(5));
    QVERIFY(near(cross.latency_us, 0.25 * 2 + 1.0 + 0.6 * 2 + 1.0));
    double nvlinkShare = 0;
    for (const LinkShare& ls : cross.links) {
        const TopoLink& l = t.link(ls.link);
        QVERIFY(t.node(l.to).kind != NodeKind::spine);
        if (l.kind == LinkKind::nvlink)
            nvlinkShare += ls.share;
        else
            QVERIFY(near(ls.share, 1.0));
    }
    QVERIFY(near(nvlinkShare, 2.0));  // two NVLink hops, each the whole pair's bytes over 4 chips
    // Every cross-node pair leaves through the NIC of the GPU on the destination's rail.
    for (int s = 0; s < 64; s += 3)
        for (int d = 0; d < 64; ++d)
            if (s / 8 != d / 8) {
                const Route& r = t.route(GpuId(s), GpuId(d));
                QVERIFY(r.crosses_network);
                QCOMPARE(t.node(nicsUsed(t, r)[0]).gpu, GpuId((s / 8) * 8 + d % 8));
                QCOMPARE(r.hops, s % 8 == d % 8 ? 4 : 6);
            }
}

void TestTopology::hgxNoPxn()
{
    Topology t = build("hgx-h200", 8);
    t.pxn = false;
    t.finalize();
    const Route& r = t.route(GpuId(0), GpuId(29));
    QVERIFY(r.crosses_network);
    const auto nics = nicsUsed(t, r);
    QCOMPARE(nics.size(), std::size_t(1));
    QCOMPARE(t.node(nics[0]).gpu, GpuId(0));
    QCOMPARE(r.hops, 6);  // GPU->NIC, NIC->leaf0, leaf0->spine, spine->leaf5, leaf5->NIC, NIC->GPU
    double spineIn = 0;
    int spineLinks = 0;
    for (const LinkShare& ls : r.links) {
        QVERIFY(t.link(ls.link).kind != LinkKind::nvlink);
        if (t.node(t.link(ls.link).to).kind == NodeKind::spine) {
            spineIn += ls.share;
            ++spineLinks;
        }
    }
    QCOMPARE(spineLinks, 4);  // ECMP over all spines
    QVERIFY(near(spineIn, 1.0));
}

void TestTopology::nvlinkCapacityMatchesSpec_data()
{
    QTest::addColumn<QByteArray>("key");
    QTest::addColumn<double>("perDir");
    QTest::addColumn<int>("chips");
    QTest::addRow("gb200-nvl72") << QByteArray("gb200-nvl72") << 900.0 << 18;
    QTest::addRow("gb300-nvl72") << QByteArray("gb300-nvl72") << 900.0 << 18;
    QTest::addRow("hgx-h100") << QByteArray("hgx-h100") << 450.0 << 4;
    QTest::addRow("hgx-h800") << QByteArray("hgx-h800") << 200.0 << 4;
    QTest::addRow("hgx-h200") << QByteArray("hgx-h200") << 450.0 << 4;
    QTest::addRow("hgx-b200") << QByteArray("hgx-b200") << 900.0 << 2;
}

void TestTopology::nvlinkCapacityMatchesSpec()
{
    QFETCH(QByteArray, key);
    QFETCH(double, perDir);
    QFETCH(int, chips);
    const Topology t = build(key.toStdString());
    QCOMPARE(t.gpu.nvlink_gbs_per_dir, perDir);
    QCOMPARE(t.count(NodeKind::nvswitch), chips);
    for (int g = 0; g < t.numGpus(); ++g)
        QVERIFY(near(nvlinkOut(t, GpuId(g)), perDir));
    QVERIFY(t.switch_power_w > 0);
}

void TestTopology::overrides()
{
    TopologyParams p;
    p.builtin = "hgx-h200";
    p.nodes = 2;
    p.nic_gbs = 100;
    p.nvlink_gbs = 600;
    p.nics_per_gpu = 2;
    const Topology t = buildTopology(p);
    QCOMPARE(t.count(NodeKind::nic), 32);
    QCOMPARE(t.count(NodeKind::leaf), 16);
    QCOMPARE(t.gpu.nvlink_gbs_per_dir, 600.0);
    QCOMPARE(nvlinkOut(t, GpuId(3)), 600.0);
    for (const TopoLink& l : t.links())
        if (t.node(l.from).kind == NodeKind::nic && t.node(l.to).kind == NodeKind::leaf)
            QCOMPARE(l.capacity_gbs, 100.0);
    // Two NICs per GPU: the pair's bytes split evenly over both (each on its own rail/leaf).
    const Route& r = t.route(GpuId(3), GpuId(11));  // same local index: no NVLink hop
    QCOMPARE(r.hops, 4);
    const auto nics = nicsUsed(t, r);
    QCOMPARE(nics.size(), std::size_t(2));
    for (const LinkShare& ls : r.links)
        QVERIFY(near(ls.share, 0.5));
    QVERIFY(near(r.latency_us, 1.0 + 0.6 * 2 + 1.0));

    const Topology nvl = [] {
        TopologyParams q;
        q.builtin = "gb300-nvl72";
        q.nic_gbs = 25;
        return buildTopology(q);
    }();
    for (const TopoLink& l : nvl.links())
        if (l.kind == LinkKind::network && nvl.node(l.from).kind == NodeKind::nic)
            QCOMPARE(l.capacity_gbs, 25.0);
    QCOMPARE(nvl.gpu.fp4_tflops, 15000.0);
    QCOMPARE(nvl.gpu.hbm_usable_gb, 279.0);
}

void TestTopology::finalizeTiming()
{
    using Clock = std::chrono::steady_clock;
    auto time = [](Topology t) {
        const auto start = Clock::now();
        t.finalize();
        return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    };
    const double nvl72 = time(build("gb200-nvl72"));
    const double hgx8 = time(build("hgx-h200", 8));
    const double nvl72x2 = time(build("gb200-nvl72", 2));
    qInfo("finalize: NVL72 %.2f ms, 8 x HGX-H200 %.2f ms, 2-rack NVL72 %.2f ms", nvl72, hgx8, nvl72x2);
#ifdef NDEBUG
    // Budget 50 ms (optimised build); the bound leaves room for a busy machine.
    QVERIFY(nvl72 < 200);
    QVERIFY(hgx8 < 200);
#endif
}

QTEST_GUILESS_MAIN(TestTopology)
#include "tst_topology.moc"
