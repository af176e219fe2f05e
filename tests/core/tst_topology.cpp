// Topology: built-in graphs against the hardware they model (FACTS.md 1), routes, YAML.
//   tst_topology                          run all
//   MOEX_WRITE_SAMPLES=1 tst_topology samples   rewrite samples/topologies/*.yaml from the built-ins
#include "common/atomic_file.h"
#include "topology/builtin_topologies.h"
#include "topology/topology_yaml.h"

#include <QTest>

#include <chrono>
#include <cmath>
#include <map>
#include <set>

using namespace moex;

namespace {

#define CHECK_TEXT(cond, text)                                                                                         \
    do {                                                                                                               \
        const std::string msg_ = (text);                                                                               \
        QVERIFY2((cond), msg_.c_str());                                                                                \
    } while (false)

bool near(double a, double b, double eps = 1e-12)
{
    return std::fabs(a - b) <= eps * std::max(1.0, std::fabs(b));
}

Topology build(const std::string& key, int count = 1)
{
    TopologyParams p;
    p.builtin = key;
    if (key.find("nvl72") != std::string::npos)
        p.racks = count;
    else
        p.nodes = count;
    return buildTopology(p);
}

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

struct Loaded {
    std::optional<Topology> topology;
    Diagnostics diags;
};

Loaded loadText(const std::string& text)
{
    Loaded out;
    auto root = parseYaml(text, "t.yaml", out.diags);
    if (!root)
        return out;
    YamlReader reader("t.yaml", out.diags);
    out.topology = readTopology(*root, reader);
    return out;
}

const char* const kSampleKeys[] = {"gb200-nvl72", "gb300-nvl72", "hgx-h100", "hgx-h800", "hgx-h200", "hgx-b200"};

// The leading comment block of a sample (what it is, where its numbers come from, an example);
// regeneration keeps it and rewrites the graph below it.
std::string commentBlock(const std::string& text)
{
    std::size_t end = 0;
    while (end < text.size() && text[end] == '#') {
        const std::size_t nl = text.find('\n', end);
        end = nl == std::string::npos ? text.size() : nl + 1;
    }
    return text.substr(0, end);
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
    void invalidParams_data();
    void invalidParams();
    void customTopology();
    void malformedYaml_data();
    void malformedYaml();
    void allErrorsReported();
    void paramsYaml();
    void roundTrip_data();
    void roundTrip();
    void samples();
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

void TestTopology::invalidParams_data()
{
    QTest::addColumn<QByteArray>("key");
    QTest::addColumn<int>("racks");
    QTest::addColumn<int>("nodes");
    QTest::addColumn<int>("gpusPerNode");
    QTest::addColumn<int>("nicsPerGpu");
    QTest::addColumn<QByteArray>("fragment");
    QTest::addRow("unknown") << QByteArray("hgx-h300") << 1 << 1 << 8 << 1
                             << QByteArray("valid names: gb200-nvl72, gb300-nvl72, hgx-h100");
    QTest::addRow("racks 0") << QByteArray("gb200-nvl72") << 0 << 1 << 8 << 1
                             << QByteArray("racks = 0 is out of range [1, 16]");
    QTest::addRow("racks 17") << QByteArray("gb300-nvl72") << 17 << 1 << 8 << 1 << QByteArray("racks = 17");
    QTest::addRow("nodes 129") << QByteArray("hgx-h100") << 1 << 129 << 8 << 1
                               << QByteArray("nodes = 129 is out of range [1, 128]");
    QTest::addRow("gpus 9") << QByteArray("hgx-h200") << 1 << 1 << 9 << 1 << QByteArray("gpus_per_node = 9");
    QTest::addRow("nics 5") << QByteArray("hgx-b200") << 1 << 1 << 8 << 5 << QByteArray("nics_per_gpu = 5");
    QTest::addRow("racks on hgx") << QByteArray("hgx-h800") << 2 << 1 << 8 << 1
                                  << QByteArray("'racks' applies to NVL72");
    QTest::addRow("nodes on nvl72") << QByteArray("gb200-nvl72") << 1 << 4 << 8 << 1
                                    << QByteArray("'nodes' applies to hgx");
}

void TestTopology::invalidParams()
{
    QFETCH(QByteArray, key);
    QFETCH(int, racks);
    QFETCH(int, nodes);
    QFETCH(int, gpusPerNode);
    QFETCH(int, nicsPerGpu);
    QFETCH(QByteArray, fragment);
    TopologyParams p;
    p.builtin = key.toStdString();
    p.racks = racks;
    p.nodes = nodes;
    p.gpus_per_node = gpusPerNode;
    p.nics_per_gpu = nicsPerGpu;
    try {
        buildTopology(p);
        QFAIL("expected std::invalid_argument");
    } catch (const std::invalid_argument& e) {
        CHECK_TEXT(std::string(e.what()).find(fragment.toStdString()) != std::string::npos, e.what());
    }
}

const char* const kSmallCustom = R"(name: two-gpus
gpu: {base: h200, hbm_usable_gb: 130}
nodes:
  - {name: g0, kind: gpu}
  - {name: g1, kind: gpu}
  - {name: sw, kind: nvswitch}
links:
  - {from: g0, to: sw, kind: nvlink, gbs: 200, latency_us: 0.3}
  - {from: g1, to: sw, kind: nvlink, gbs: 200}
)";

void TestTopology::customTopology()
{
    Loaded l = loadText(kSmallCustom);
    CHECK_TEXT(l.topology.has_value() && l.diags.empty(), l.diags.format());
    const Topology& t = *l.topology;
    QCOMPARE(t.name, std::string("two-gpus"));
    QCOMPARE(t.numGpus(), 2);
    QCOMPARE(t.gpu.name, std::string("H200 SXM"));
    QCOMPARE(t.gpu.hbm_usable_gb, 130.0);
    QCOMPARE(t.gpu.hbm_bw_gbs, 4800.0);
    QCOMPARE(t.links().size(), std::size_t(4));
    const Route& r = t.route(GpuId(0), GpuId(1));
    QCOMPARE(r.hops, 2);
    QCOMPARE(r.links.size(), std::size_t(2));
    QVERIFY(near(r.latency_us, 0.3 + 0.25));  // default nvlink latency on the second link
    QCOMPARE(t.link(r.links[0].link).capacity_gbs, 200.0);

    // A GPU of its own: every figure given, usable HBM defaulting to the whole.
    Loaded own =
        loadText("gpu: {name: X1, arch: blackwell, hbm_gb: 96, hbm_bw_gbs: 3000, bf16_tflops: 500, tdp_w: 400}\n"
                 "nodes:\n  - {name: g, kind: gpu}\n");
    CHECK_TEXT(own.topology.has_value(), own.diags.format());
    QCOMPARE(own.topology->gpu.hbm_usable_gb, 96.0);
    QVERIFY(own.topology->gpu.arch == GpuArch::blackwell);
    QCOMPARE(own.topology->name, std::string("custom"));
}

void TestTopology::malformedYaml_data()
{
    QTest::addColumn<QByteArray>("yaml");
    QTest::addColumn<int>("line");
    QTest::addColumn<QByteArray>("fragment");
    const QByteArray head = "name: t\ngpu: h200\nnodes:\n  - {name: gpu0, kind: gpu}\n  - {name: gpu1, kind: gpu}\n"
                            "  - {name: sw0, kind: nvswitch}\n";
    const QByteArray ok = "  - {from: gpu0, to: sw0, kind: nvlink, gbs: 100}\n";
    QTest::addRow("unknown node in link")
        << head + "links:\n" + ok + "  - {from: gpu1, to: sw1, kind: nvlink, gbs: 100}\n"
        << 9 << QByteArray("'to' names unknown node 'sw1'; did you mean 'sw0'?");
    QTest::addRow("duplicate name") << head + "  - {name: gpu1, kind: gpu}\nlinks: []\n"
                                    << 7 << QByteArray("duplicate node name 'gpu1' (first defined at line 5)");
    QTest::addRow("negative gbs") << head + "links:\n  - {from: gpu0, to: sw0, kind: nvlink, gbs: -5}\n"
                                  << 8 << QByteArray("link capacity 'gbs' must be positive, got -5");
    QTest::addRow("zero gbs") << head + "links:\n  - {from: gpu0, to: sw0, kind: nvlink, gbs: 0}\n"
                              << 8 << QByteArray("must be positive, got 0");
    QTest::addRow("nan gbs") << head + "links:\n  - {from: gpu0, to: sw0, kind: nvlink, gbs: .nan}\n"
                             << 8 << QByteArray("got NaN");
    QTest::addRow("unknown node key") << QByteArray("gpu: h200\nnodes:\n  - {name: g, kind: gpu, domian: 1}\n") << 3
                                      << QByteArray("unknown key 'domian' in topology node; did you mean 'domain'?");
    QTest::addRow("unknown top key") << head + "link: []\n"
                                     << 7 << QByteArray("unknown key 'link' in topology; did you mean 'links'?");
    QTest::addRow("disconnected gpu") << head + "links:\n" + ok << 1
                                      << QByteArray("no route from gpu 'gpu0' to gpu 'gpu1'");
    QTest::addRow("no gpus") << QByteArray("gpu: h200\nnodes:\n  - {name: sw0, kind: nvswitch}\n") << 3
                             << QByteArray("the topology has no gpu nodes");
    QTest::addRow("wrong builtin param") << QByteArray("builtin: hgx-h200\nracks: 2\n") << 2
                                         << QByteArray("'racks' does not apply to hgx-h200");
    QTest::addRow("nodes on nvl72") << QByteArray("{builtin: gb200-nvl72, nodes: 2}") << 1
                                    << QByteArray("'nodes' does not apply to gb200-nvl72");
    QTest::addRow("unknown builtin") << QByteArray("builtin: hgx-h20\n") << 1
                                     << QByteArray("unknown built-in topology 'hgx-h20'; valid names: gb200-nvl72");
    QTest::addRow("builtin typo hint") << QByteArray("builtin: hgx-h20\n") << 1
                                       << QByteArray("did you mean 'hgx-h200'?");
    QTest::addRow("nodes out of range") << QByteArray("builtin: hgx-h200\nnodes: 200\n") << 2
                                        << QByteArray("'nodes' = 200 is out of range [1, 128]");
    QTest::addRow("unknown kind") << QByteArray("gpu: h200\nnodes:\n  - {name: g, kind: gpuu}\n") << 3
                                  << QByteArray("'kind' must be one of: gpu, nvswitch");
    QTest::addRow("unknown gpu spec") << QByteArray("gpu: h2000\nnodes:\n  - {name: g, kind: gpu}\n") << 1
                                      << QByteArray("unknown GPU 'h2000'; built-in GPUs: h100");
    QTest::addRow("nic without gpu") << head + "  - {name: nic0, kind: nic}\nlinks: []\n"
                                     << 7 << QByteArray("nic 'nic0' needs 'gpu: NAME'");
    QTest::addRow("nic names a switch") << head + "  - {name: nic0, kind: nic, gpu: sw0}\nlinks: []\n"
                                        << 7 << QByteArray("'gpu' names unknown gpu 'sw0'");
    QTest::addRow("nic not linked") << head + "  - {name: nic0, kind: nic, gpu: gpu1}\nlinks: []\n"
                                    << 7 << QByteArray("nic 'nic0' needs a link to and from its gpu 'gpu1'");
    QTest::addRow("gpu spec incomplete") << QByteArray(
                                                "gpu: {name: X1, hbm_gb: 96}\nnodes:\n  - {name: g, kind: gpu}\n")
                                         << 1 << QByteArray("missing required key 'hbm_bw_gbs'");
    QTest::addRow("gpu spec key typo") << QByteArray("gpu: {base: h100, tdp: 600}\nnodes:\n  - {name: g, kind: gpu}\n")
                                       << 1 << QByteArray("unknown key 'tdp' in gpu; did you mean 'tdp_w'?");
    QTest::addRow("self link") << head + "links:\n  - {from: gpu0, to: gpu0, kind: nvlink, gbs: 5}\n"
                               << 8 << QByteArray("to itself");
}

void TestTopology::malformedYaml()
{
    QFETCH(QByteArray, yaml);
    QFETCH(int, line);
    QFETCH(QByteArray, fragment);
    Loaded l = loadText(yaml.toStdString());
    QVERIFY(!l.topology.has_value());
    bool found = false;
    for (const Diagnostic& d : l.diags.items())
        found = found || (d.where.line == line && d.message.find(fragment.toStdString()) != std::string::npos);
    CHECK_TEXT(found,
               "expected line " + std::to_string(line) + ": " + fragment.toStdString() + "\ngot:\n" + l.diags.format());
    QVERIFY(l.diags.format().find("t.yaml:") == 0);
}

void TestTopology::allErrorsReported()
{
    const std::string yaml =
        "gpu: h200\nnodes:\n  - {name: a, kind: gpu}\n  - {name: a, kind: gpu}\n"
        "links:\n  - {from: a, to: b, kind: nvlink, gbs: -1}\n  - {from: a, to: c, kind: nv, gbs: 1}\n";
    Loaded l = loadText(yaml);
    QVERIFY(!l.topology.has_value());
    CHECK_TEXT(l.diags.size() >= 5, l.diags.format());  // duplicate, unknown b, gbs, unknown c, kind
}

void TestTopology::paramsYaml()
{
    Diagnostics diags;
    auto root = parseYaml("{builtin: hgx-h200, nodes: 8, nics_per_gpu: 2, nic_gbs: 100}", "p.yaml", diags);
    QVERIFY(root.has_value());
    YamlReader reader("p.yaml", diags);
    auto p = readTopologyParams(*root, reader);
    CHECK_TEXT(p.has_value(), diags.format());
    QCOMPARE(p->builtin, std::string("hgx-h200"));
    QCOMPARE(p->nodes, 8);
    QCOMPARE(p->nics_per_gpu, 2);
    QCOMPARE(p->nic_gbs, 100.0);
    QCOMPARE(topologyParamsToYaml(*p), std::string("{builtin: hgx-h200, nodes: 8, nics_per_gpu: 2, nic_gbs: 100}"));
    TopologyParams plain;
    plain.builtin = "gb200-nvl72";
    QCOMPARE(topologyParamsToYaml(plain), std::string("{builtin: gb200-nvl72}"));
    plain.racks = 2;
    plain.nvlink_gbs = 812.5;
    auto again = parseYaml(topologyParamsToYaml(plain), "q.yaml", diags);
    YamlReader r2("q.yaml", diags);
    auto q = readTopologyParams(*again, r2);
    QVERIFY(q.has_value());
    QCOMPARE(q->racks, 2);
    QCOMPARE(q->nvlink_gbs, 812.5);
    // readTopology builds it.
    auto built = readTopology(*root, reader);
    QVERIFY(built.has_value());
    QCOMPARE(built->numGpus(), 64);
    QCOMPARE(built->builtin, std::string("hgx-h200"));
}

void TestTopology::roundTrip_data()
{
    QTest::addColumn<QByteArray>("key");
    QTest::addColumn<int>("count");
    QTest::addColumn<int>("nicsPerGpu");
    QTest::addColumn<bool>("pxn");
    QTest::addRow("gb200 x2") << QByteArray("gb200-nvl72") << 2 << 1 << true;
    QTest::addRow("hgx-h800 x3, 2 nics") << QByteArray("hgx-h800") << 3 << 2 << true;
    QTest::addRow("hgx-b200 x2, no pxn") << QByteArray("hgx-b200") << 2 << 1 << false;
}

void TestTopology::roundTrip()
{
    QFETCH(QByteArray, key);
    QFETCH(int, count);
    QFETCH(int, nicsPerGpu);
    QFETCH(bool, pxn);
    TopologyParams p;
    p.builtin = key.toStdString();
    (p.builtin.find("nvl72") != std::string::npos ? p.racks : p.nodes) = count;
    p.nics_per_gpu = nicsPerGpu;
    p.nvlink_gbs = 1.0 / 3 * 1000;  // a double that needs all 17 digits
    Topology t = buildTopology(p);
    t.pxn = pxn;
    t.gpu.idle_w = 123.456;
    t.finalize();
    const std::string yaml = topologyToYaml(t);
    Loaded l = loadText(yaml);
    CHECK_TEXT(l.topology.has_value(), l.diags.format());
    const std::string diff = firstDifference(t, *l.topology);
    CHECK_TEXT(diff.empty(), diff);
    QVERIFY(l.topology->builtin.empty());
    QCOMPARE(topologyToYaml(*l.topology), yaml);
    // The difference finder itself notices a change.
    Topology changed = *l.topology;
    changed.gpu.tdp_w += 1;
    QVERIFY(!firstDifference(t, changed).empty());
}

void TestTopology::samples()
{
    // MOEX_WRITE_SAMPLES=1 tst_topology samples: rewrite the graphs from the built-ins.
    const bool write = qEnvironmentVariableIsSet("MOEX_WRITE_SAMPLES");
    for (const char* key : kSampleKeys) {
        const std::string path = std::string(MOEX_SOURCE_DIR) + "/samples/topologies/" + key + ".yaml";
        const Topology built = build(key);
        const std::string header = commentBlock(readFile(path));
        if (write)
            writeFileAtomically(path, header + topologyToYaml(built));
        Topology loaded;
        try {
            loaded = loadTopologyFile(path);
        } catch (const InputError& e) {
            QFAIL(e.what());
        }
        const std::string diff = firstDifference(built, loaded);
        CHECK_TEXT(diff.empty(), path + ": " + diff + " (regenerate with MOEX_WRITE_SAMPLES=1 tst_topology samples)");
        CHECK_TEXT(header.find("FACTS.md") != std::string::npos, path + ": the opening comment must cite FACTS.md");
        CHECK_TEXT(header.find("moex-cli validate samples/topologies/" + std::string(key) + ".yaml") !=
                       std::string::npos,
                   path + ": the opening comment must show an example command");
    }
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
